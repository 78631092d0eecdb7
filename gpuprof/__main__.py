"""python -m gpuprof."""

from gpuprof.cli import main

main()
