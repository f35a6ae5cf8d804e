"""``surrobench optimize``'s floor, between ``results`` and ``api`` (docs/design.md, "The layers as built"). Not
named ``optimize``: importing it would shadow the public function ``surrobench.optimize``.
"""
