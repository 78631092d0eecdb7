"""Parsers: recorded ncu, nsys and compute-sanitizer output (text, bytes, paths) -> frozen records."""
