"""The library layer: one module per verb, called by the CLI and by scripts."""
