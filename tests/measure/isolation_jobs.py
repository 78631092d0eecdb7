"""Jobs for tests/measure/test_isolation.py: module-level, so the spawned worker can import them."""

from __future__ import annotations

import os
import signal
import time

from gpuprof.errors import ParseError, UsageError


def double(x: int, emit) -> int:
    emit("working")
    return 2 * x


def pid(emit) -> int:
    return os.getpid()


def segfault(emit) -> None:
    emit("check")
    os.kill(os.getpid(), signal.SIGSEGV)
    time.sleep(60)


def exits(emit) -> None:
    emit("compile")
    os._exit(7)


def hangs(emit) -> None:
    emit("check")
    time.sleep(600)


def usage_error(emit) -> None:
    raise UsageError("bad --thing 'x'; choose from: a, b")


def parse_error(emit) -> None:
    raise ParseError("report.csv", "line 3", "truncated")


def bug(emit) -> None:
    raise ValueError("a bug in the job")
