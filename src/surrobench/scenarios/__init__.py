"""The scenario suite: small workloads that each plant one bottleneck, with the finding they should get.

:mod:`surrobench.scenarios.models` holds the models (``--model scenario:NAME``);
:mod:`surrobench.scenarios.suite` the expectations and the runner behind ``surrobench scenarios``.
"""
