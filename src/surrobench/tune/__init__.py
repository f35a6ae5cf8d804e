"""``surrobench optimize``'s floor, between ``results`` and ``api`` (docs/design.md, "The layers as built"):
:mod:`~surrobench.tune.request` (the request), :mod:`~surrobench.tune.bench` (what the search measures with),
:mod:`~surrobench.tune.trials` and :mod:`~surrobench.tune.search` (the search of one config),
:mod:`~surrobench.tune.config` (one config reported), :mod:`~surrobench.tune.plans` (every config, stored),
:mod:`~surrobench.tune.fresh` (fresh processes), :mod:`~surrobench.tune.advice` (diagnose's measured remedies).
Not named ``optimize``: importing it would shadow the public function ``surrobench.optimize``.
"""
