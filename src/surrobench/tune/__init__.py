"""``surrobench optimize``'s own floor, between ``results`` and ``api`` (docs/design.md, "The layers as built").

- :mod:`surrobench.tune.request`: what optimize is asked for, its defaults and checks;
- :mod:`surrobench.tune.bench`: what the search measures with (the :class:`~surrobench.tune.bench.Bench`
  protocol) and the bench of one config on this machine;
- :mod:`surrobench.tune.trials`, :mod:`surrobench.tune.search`: the search of one config, an object that owns its
  state, with measuring and the clock injected;
- :mod:`surrobench.tune.config`: one config searched and reported; :mod:`surrobench.tune.plans`: every config of
  a request, stored;
- :mod:`surrobench.tune.fresh`, :mod:`surrobench.tune.fresh_child`: the recipe measured again in fresh processes.

The package is not named ``optimize``: ``surrobench.optimize`` is the public function (``surrobench/__init__.py``
exports it lazily), and importing a subpackage of that name would bind it as the attribute ``surrobench.optimize``,
shadowing the function. The records stay in :mod:`surrobench.results.optimize` and
:mod:`surrobench.results.fresh`, where ``report`` reads them; the public entry stays
:func:`surrobench.api.optimize.optimize`.
"""
