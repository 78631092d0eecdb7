"""python -m gpuprof (and the `gpuprof` script): Ctrl-C even during start-up is one line, exit 130
(SIGTERM the same, exit 143); a closed stdout (`gpuprof doctor >&-`) is one line, exit 3."""

import os
import sys


def _closed_streams() -> list[int]:
    """The standard descriptors (0, 1, 2) that were closed at start, each now open on /dev/null, so no
    file gpuprof opens later takes their number (a results file opened as fd 1 would get the table)."""
    closed = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            closed.append(fd)
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    if 0 in closed:
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the process's own stream
    if 2 in closed:
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
    return closed


def _terminate(signum: int, frame: object) -> None:
    from gpuprof.errors import Terminated

    raise Terminated()


def main() -> None:
    try:  # os and sys are loaded with the interpreter; anything imported here can meet a Ctrl-C
        import signal

        from gpuprof.errors import TERMINATED_EXIT_CODE, Interrupted, Terminated, stop_word

        # SIGTERM (kill, a CI's timeout) stops gpuprof as Ctrl-C does: its finally blocks run, so a
        # half-written temporary file is removed and child processes are ended, not orphaned.
        signal.signal(signal.SIGTERM, _terminate)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted; nothing was saved\n")
        sys.exit(130)  # errors.Interrupted.exit_code, before errors could be imported
    if 1 in _closed_streams():
        sys.stderr.write("error: stdout is closed; gpuprof has nowhere to write (redirect it to /dev/null "
                         "instead of closing it)\n")
        sys.exit(3)  # errors.EnvironmentProblem.exit_code: the environment, not the command line
    try:
        import gpuprof.cli

        gpuprof.cli.main()  # Typer builds its commands before the boundary (cli/_app.py) catches anything
    except KeyboardInterrupt as exc:
        app = sys.modules.get("gpuprof.cli._app")
        if not getattr(getattr(app, "OneLineErrors", None), "finished", False):  # after its end it has said all
            sys.stderr.write(f"{stop_word(exc)}; nothing was saved\n")
        sys.exit(TERMINATED_EXIT_CODE if isinstance(exc, Terminated) else Interrupted.exit_code)


if __name__ == "__main__":  # a spawned worker imports this module as __mp_main__: it must not run the CLI
    main()
