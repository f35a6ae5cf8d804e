"""Rendering: rich terminal tables, HTML report, plots. Renderers take result data and return renderables."""
