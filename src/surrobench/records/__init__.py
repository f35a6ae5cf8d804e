"""The records floor: the typed, frozen records every layer passes around, and the vocabularies they use.

Nothing here imports another surrobench package (``surrobench.errors`` aside), so any layer may import it:
the config identity (:mod:`~surrobench.records.config`), the run and its config results
(:mod:`~surrobench.records.run`), latency statistics (:mod:`~surrobench.records.stats`), the op table
(:mod:`~surrobench.records.ops`), the device ceilings (:mod:`~surrobench.records.ceilings`), the system view
(:mod:`~surrobench.records.system`), findings and their evidence (:mod:`~surrobench.records.findings`),
the vocabularies of modes, precisions and devices (:mod:`~surrobench.records.vocab`) and the JSON schema ids
(:mod:`~surrobench.records.schemas`). The layering is drawn in ``docs/design.md``.
"""
