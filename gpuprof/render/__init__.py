"""Renderers: records to Rich tables, Markdown and JSON text; no statistics and no file reading here."""
