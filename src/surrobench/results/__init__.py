"""Results: statistics of samples, the run record and its JSON schema, the SQLite store."""
