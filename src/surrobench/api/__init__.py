"""The library layer: one module per verb, each orchestrating the stages below it (workload, execution,
collect, trace, analysis, results) and returning the typed records of :mod:`surrobench.records`.
The command line (:mod:`surrobench.cli`) is a thin shell over it; ``docs/design.md`` draws the layers.
"""
