"""gpuprof's CUPTI activity files (tools/cupti_inject/gpuprof_cupti.cpp) -> kernels, copies, calls,
NVTX ranges; hand-written records for the edge cases (the recorded H200 file: test_cupti_recorded.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuprof.errors import InputError, ParseError
from gpuprof.parsers import cupti_activity as ca

HEADER = {"type": "header", "format": "gpuprof-cupti", "version": 1, "cupti_api": 130001, "cupti_headers": 130001,
          "pid": 7, "ts": 0}


def kernel(name: str, start: int, end: int, correlation: int, stream: int = 7) -> dict:
    return {"type": "kernel", "name": name, "mangled": name, "start": start, "end": end, "device": 0, "context": 1,
            "stream": stream, "correlation": correlation, "grid": [4, 1, 1], "block": [128, 1, 1], "registers": 32,
            "static_shared": 0, "dynamic_shared": 0}


def call(domain: str, name: str, start: int, end: int, correlation: int, tid: int = 5) -> dict:
    return {"type": domain, "name": name, "cbid": 1, "start": start, "end": end, "tid": tid,
            "correlation": correlation}


def marker(flags: int, ident: int, ts: int, name: str | None = None, tid: int = 5, domain: str | None = None) -> dict:
    return {"type": "marker", "flags": flags, "id": ident, "ts": ts, "tid": tid, "name": name, "domain": domain}


def write(path: Path, records: list[dict], end: bool = True) -> Path:
    lines = [HEADER, *records, *([{"type": "end", "dropped": 0}] if end else [])]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


def test_driver_calls_inside_runtime_calls_are_the_runtimes_own(tmp_path):
    f = write(tmp_path / "activity-7.jsonl", [
        call("runtime", "cudaMalloc_v3020", 100, 200, 1), call("driver", "cuMemAlloc_v2", 110, 190, 2),
        call("driver", "cuLaunchKernel", 300, 310, 3),  # the program's own driver call (CuPy's launches)
        call("driver", "cuMemAlloc_v2", 150, 160, 4, tid=6),  # inside another thread's runtime call: its own
    ])
    activity = ca.read_activity([f])
    assert [(c.name, c.tid) for c in activity.calls] == [("cudaMalloc", 5), ("cuMemAlloc_v2", 6),
                                                         ("cuLaunchKernel", 5)]
    assert activity.internal_driver_calls == 1


def test_ranges_get_their_path_and_kernels_go_to_the_innermost_range_open_at_launch(tmp_path):
    f = write(tmp_path / "activity-7.jsonl", [
        marker(2, 1, 100, "matmul"), marker(2, 2, 110, "naive"),
        call("runtime", "cudaLaunchKernel_v7000", 120, 130, 10), kernel("naive_k", 500, 900, 10),
        marker(4, 2, 950), marker(2, 3, 960, "tiled"),
        call("runtime", "cudaLaunchKernel_v7000", 970, 980, 11), kernel("tiled_k", 1000, 1100, 11),
        marker(4, 3, 1200), marker(4, 1, 1300),
        call("runtime", "cudaLaunchKernel_v7000", 1400, 1410, 12), kernel("after_k", 1500, 1600, 12),
        call("runtime", "cudaLaunchKernel_v7000", 140, 150, 13, tid=9), kernel("other_thread_k", 1700, 1800, 13),
    ])
    activity = ca.read_activity([f])
    assert {(r.path, r.start_ns, r.end_ns) for r in activity.ranges} == {
        ("matmul", 100, 1300), ("matmul/naive", 110, 950), ("matmul/tiled", 960, 1200)}
    groups = {path: [k.name for k in ks] for path, ks in ca.kernels_by_range(activity).items()}
    assert groups == {"matmul/naive": ["naive_k"], "matmul/tiled": ["tiled_k"],
                      ca.OUTSIDE: ["after_k", "other_thread_k"]}


def test_ops_carry_when_their_runtime_call_began(tmp_path):
    f = write(tmp_path / "activity-7.jsonl", [
        call("runtime", "cudaMemcpy_v3020", 100, 400, 1), call("driver", "cuMemcpyHtoD_v2", 120, 390, 1),
        {"type": "memcpy", "copy_kind": 1, "bytes": 4096, "start": 200, "end": 300, "device": 0, "stream": 7,
         "correlation": 1},
        {"type": "memset", "bytes": 64, "start": 350, "end": 360, "device": 0, "stream": 7, "correlation": 99},
    ])
    activity = ca.read_activity([f])
    assert [t.operation for t in activity.transfers] == ["[CUDA memcpy Host-to-Device]", "[CUDA memset]"]
    ops = ca.gpu_ops(activity)
    assert [(op.kind, op.queued_ns) for op in ops] == [("memcpy", 100.0), ("memset", None)]


def test_a_file_without_its_end_line_is_an_unfinished_process_and_a_torn_last_line_is_dropped(tmp_path):
    f = write(tmp_path / "activity-7.jsonl.partial", [kernel("k", 1, 2, 1)], end=False)
    f.write_text(f.read_text() + '{"type": "kernel", "na')
    activity = ca.read_activity([f])
    assert activity.unfinished == (f,) and len(activity.kernels) == 1


def test_unclosed_ranges_and_warnings_are_counted(tmp_path):
    f = write(tmp_path / "activity-7.jsonl", [marker(2, 1, 5, "open"), {"type": "warning", "what": "marker",
                                                                         "cupti": "CUPTI_ERROR_NOT_SUPPORTED"}])
    activity = ca.read_activity([f])
    assert activity.unclosed_ranges == 1 and not activity.ranges
    assert activity.warnings == ("CUPTI would not record marker: CUPTI_ERROR_NOT_SUPPORTED",)


@pytest.mark.parametrize(("text", "why"), [
    ("", "empty"),
    ('{"type": "header", "format": "other"}\n', "not a gpuprof CUPTI activity file"),
    ('{"type": "header", "format": "gpuprof-cupti", "version": 99}\n', "format version 99"),
    (json.dumps(HEADER) + "\n" + '{"type": "kernel", "name": "k"}\n', "expected an integer start"),
    (json.dumps(HEADER) + "\nnot json\n", "not JSON"),
    (json.dumps(HEADER) + "\n[1, 2]\n", "a JSON object per line"),
    (json.dumps(HEADER) + "\n" + json.dumps(HEADER) + "\n", "a second header"),
])
def test_a_damaged_or_foreign_file_is_one_parse_error(tmp_path, text, why):
    f = tmp_path / "activity-1.jsonl"
    f.write_text(text)
    with pytest.raises(ParseError, match=why):
        ca.read_activity([f])


def test_binary_junk_is_an_input_error_not_a_traceback(tmp_path):
    f = tmp_path / "activity-1.jsonl"
    f.write_bytes(b"\x00\x01\x02")
    with pytest.raises(InputError):
        ca.read_activity([f])


def test_api_names_drop_cuptis_version_suffix_but_keep_the_drivers_own():
    assert ca.api_name("cudaLaunchKernel_v7000") == "cudaLaunchKernel"
    assert ca.api_name("cuMemAlloc_v2") == "cuMemAlloc_v2"
    assert ca.copy_name(8) == "[CUDA memcpy Device-to-Device]" and ca.copy_name(42) == "[CUDA memcpy Unknown]"
