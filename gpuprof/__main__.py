"""python -m gpuprof (and the `gpuprof` script): Ctrl-C even during start-up is one line, exit 130."""

import sys


def main() -> None:
    try:
        import gpuprof.cli
    except KeyboardInterrupt:
        sys.stderr.write("interrupted; nothing was saved\n")
        sys.exit(130)  # errors.Interrupted.exit_code, without importing anything more
    gpuprof.cli.main()


if __name__ == "__main__":  # a spawned worker imports this module as __mp_main__: it must not run the CLI
    main()
