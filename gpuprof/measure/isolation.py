"""A replaceable worker process: a variant that faults (a sticky CUDA error poisons its whole
context) or hangs takes down only its worker; the next variant runs in a fresh one.

One worker serves job after job, so a run pays the start-up (imports, CUDA context) once, and
again only after a failure. Jobs are module-level functions called as fn(*args, emit=...); emit
sends progress events back while the job runs.
"""

from __future__ import annotations

import multiprocessing
import signal
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Self

from gpuprof import errors

DONE, CRASHED, TIMED_OUT = "done", "crashed", "timeout"
STARTUP_TIMEOUT_S = 120.0  # imports (CuPy, PyTorch) on a cold file cache take tens of seconds
_POLL_S = 0.2
_KILL_WAIT_S = 15.0


@dataclass
class JobOutcome:
    """How a job ended: DONE with its value, CRASHED (the worker died) or TIMED_OUT (it was killed).
    last_event is the last progress event the job sent, i.e. where it was."""

    status: str
    value: Any = None
    detail: str = ""
    last_event: Any = None


class WorkerBug(RuntimeError):
    """An unexpected exception inside the worker: a bug, shown with the worker's traceback."""


class Worker:
    """Runs jobs one at a time in a spawned child; started lazily, replaced after a crash or timeout."""

    def __init__(self, timeout_s: float, startup_timeout_s: float = STARTUP_TIMEOUT_S) -> None:
        if timeout_s <= 0:
            raise errors.UsageError(f"timeout must be positive seconds, not {timeout_s}")
        self.timeout_s = timeout_s
        self.startup_timeout_s = startup_timeout_s
        self._context = multiprocessing.get_context("spawn")  # never fork a process that holds CUDA
        self._process: Any = None
        self._conn: Any = None
        self.started = 0  # how many workers were started: a fresh one after each failure

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, fn: Callable[..., Any], args: tuple = (),
            on_event: Callable[[Any], None] | None = None) -> JobOutcome:
        """Run fn(*args) in the worker and wait at most timeout_s for its answer. Errors meant for
        the user (GpuprofError) are raised again here; Ctrl-C stops the worker and propagates."""
        try:
            self._ensure_started()
            self._conn.send((fn, args))
            return self._wait(on_event)
        except BaseException:
            self.retire()  # Ctrl-C or an error here: never leave a child behind
            raise

    def retire(self) -> None:
        """Stop the current worker (its CUDA context is lost, or it hangs); the next job starts a new one."""
        process, conn = self._process, self._conn
        self._process = self._conn = None
        if process is None:
            return
        if process.is_alive():
            process.kill()
        process.join(_KILL_WAIT_S)
        conn.close()

    def close(self) -> None:
        """Ask the worker to exit; kill it if it does not."""
        if self._process is not None and self._process.is_alive():
            try:
                self._conn.send(None)
                self._process.join(5.0)
            except (OSError, BrokenPipeError):
                pass
        self.retire()

    def _ensure_started(self) -> None:
        if self._process is not None and self._process.is_alive():
            return
        self.retire()
        parent, child = self._context.Pipe()
        process = self._context.Process(target=_serve, args=(child,), daemon=True, name="gpuprof-worker")
        process.start()
        child.close()
        self._process, self._conn = process, parent
        self.started += 1
        deadline = time.monotonic() + self.startup_timeout_s
        while not parent.poll(_POLL_S):
            if not process.is_alive():
                raise errors.EnvironmentProblem(
                    f"the worker process exited while starting ({_exit_text(process.exitcode)})")
            if time.monotonic() > deadline:
                raise errors.EnvironmentProblem(
                    f"the worker process did not start within {self.startup_timeout_s:.0f} s")
        try:
            ready = parent.recv()
        except EOFError:
            ready = None
        if ready != "ready":
            raise errors.EnvironmentProblem("the worker process did not start")

    def _wait(self, on_event: Callable[[Any], None] | None) -> JobOutcome:
        deadline = time.monotonic() + self.timeout_s
        last_event = None
        while True:
            if self._conn.poll(_POLL_S):
                try:
                    kind, payload = self._conn.recv()
                except (EOFError, OSError):
                    return self._crashed(last_event)
                if kind == "event":
                    last_event = payload
                    if on_event is not None:
                        on_event(payload)
                    continue
                if kind == "done":
                    return JobOutcome(DONE, value=payload, last_event=last_event)
                if kind == "error":
                    raise _rebuild(payload)
                raise WorkerBug(payload)
            if not self._process.is_alive():
                return self._crashed(last_event)
            if time.monotonic() > deadline:
                self.retire()
                return JobOutcome(TIMED_OUT, detail=f"no answer within {self.timeout_s:g} s", last_event=last_event)

    def _crashed(self, last_event: Any) -> JobOutcome:
        process = self._process
        process.join(_KILL_WAIT_S)
        detail = f"the worker process died ({_exit_text(process.exitcode)})"
        self.retire()
        return JobOutcome(CRASHED, detail=detail, last_event=last_event)


def _exit_text(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


def _serve(conn: Any) -> None:
    """The worker's loop. Ctrl-C is the parent's to handle: it stops this process itself."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    conn.send("ready")
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        fn, args = job
        try:
            value = fn(*args, emit=lambda event: conn.send(("event", event)))
            conn.send(("done", value))
        except errors.GpuprofError as exc:
            conn.send(("error", (type(exc).__name__, exc.message, exc.exit_code)))
        except Exception:  # noqa: BLE001 - any bug goes back to the parent, with its traceback
            conn.send(("bug", traceback.format_exc()))


def _rebuild(payload: tuple[str, str, int]) -> errors.GpuprofError:
    """The worker's GpuprofError again in this process: same class where it takes a message, else
    the base class with the same exit code."""
    name, message, exit_code = payload
    cls = getattr(errors, name, None)
    try:
        if isinstance(cls, type) and issubclass(cls, errors.GpuprofError):
            exc = cls(message)
            if exc.exit_code == exit_code:
                return exc
    except TypeError:
        pass
    exc = errors.GpuprofError(message)
    exc.exit_code = exit_code
    return exc
