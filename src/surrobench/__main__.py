"""``python -m surrobench`` is the same as the ``surrobench`` command."""

from surrobench.cli import entry

entry()
