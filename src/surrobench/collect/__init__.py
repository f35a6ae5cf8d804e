"""Collection layer: which tool, which metric (DESIGN.md)."""
