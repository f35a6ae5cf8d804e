"""Results: the SQLite store of runs and the comparison of two runs (the records are in :mod:`surrobench.records`)."""
