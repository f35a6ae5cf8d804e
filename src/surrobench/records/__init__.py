"""The records floor: the typed, frozen records every layer passes around, their vocabularies
(:mod:`~surrobench.records.vocab`) and the JSON schema ids and checks (:mod:`~surrobench.records.schemas`).
Nothing here imports another surrobench package (``surrobench.errors`` aside); docs/design.md draws the layers.
"""
