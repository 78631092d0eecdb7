"""NVRTC's verdict on one source, in a child process: `python -m gpuprof.variants.nvrtc_child REQUEST.json`.

A call into libnvrtc cannot be stopped from inside the process that made it, and a source whose
macros expand 2^25 times keeps NVRTC busy for minutes; in a child, the parent's time limit
(`gpuprof build --compile-timeout`) ends it as it ends nvcc. The request is a JSON object:
source, program (the name NVRTC gets), options, name_expressions. The answer is the exit code;
with REJECTED, NVRTC's log on stdout.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

COMPILED, REJECTED, UNAVAILABLE = 0, 1, 3


def verdict(request: dict) -> tuple[int, str]:
    """(COMPILED, ""), (REJECTED, NVRTC's log) or (UNAVAILABLE, why) for one request."""
    try:
        from cupy_backends.cuda.libs import nvrtc

        nvrtc.getVersion()
    except Exception as exc:  # noqa: BLE001  # loading libnvrtc fails in several ways (import, OS, CUDA): all mean none
        return UNAVAILABLE, str(exc)
    program = nvrtc.createProgram(request["source"], request["program"], [], [])
    try:
        for name in request["name_expressions"]:
            nvrtc.addNameExpression(program, name)
        nvrtc.compileProgram(program, list(request["options"]))
        return COMPILED, ""
    except nvrtc.NVRTCError:
        return REJECTED, nvrtc.getProgramLog(program)
    finally:
        nvrtc.destroyProgram(program)


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    code, said = verdict(request)
    sys.stdout.write(said)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
