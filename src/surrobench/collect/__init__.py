"""Collection layer: which tool, which metric (docs/design.md)."""
