"""One module per gpuprof command: the core each CLI command calls (no Typer, no printing)."""
