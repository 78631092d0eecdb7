"""`gpuprof sanitize` course-wide: batches of a family's variants per child, split into single runs
when a batch is not clean, results in target-then-tool order, racecheck skipped where ptxas says
no shared memory, default parallelism from CPUs and GPUs."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from gpuprof import gpu
from gpuprof.commands import sanitize, sanitize_skips
from gpuprof.commands.sanitize import SanitizeResult, default_jobs, plan_jobs
from gpuprof.commands.sanitize_skips import uses_shared_memory
from gpuprof.parsers.sanitizer_log import SanitizerFinding
from gpuprof.tools.target import LaunchTarget
from gpuprof.variants import catalog

VECADD = [LaunchTarget("vecadd", v, {"n": 4097}) for v in ("grid", "vectorized", "one_block")]


@pytest.fixture(autouse=True)
def own_triage_cache(tmp_path, monkeypatch):
    """The racecheck triage's verdicts go to a fresh cache, not the user's (and none is found there)."""
    from gpuprof.commands import sanitize_triage_cache

    monkeypatch.setattr(sanitize_triage_cache, "CACHE_DIR", tmp_path / "cache")


def clean(label, name, log):
    return SanitizeResult(label, name, error_count=0, log=log)


@pytest.fixture
def fake_runs(monkeypatch):
    """run_one replaced: records each child's argv; `bad` variants give a finding when launched."""
    calls: list[tuple[str, list[str]]] = []
    bad: set[str] = set()
    lock = threading.Lock()

    def fake_run_one(exe, name, target, label, log, leak_check=False, env=None):
        with lock:
            calls.append((name, target))
        variants = target[target.index("launch") + 2].split(",")
        if bad & set(variants):
            finding = SanitizerFinding(name, "invalid_write", "Invalid __global__ write", file="grid.cu", line=3)
            return SanitizeResult(label, name, [finding], error_count=1, log=log)
        return clean(label, name, log)

    monkeypatch.setattr(sanitize.tool, "find_sanitizer", lambda explicit=None: "compute-sanitizer")
    monkeypatch.setattr(sanitize, "run_one", fake_run_one)
    return calls, bad


@pytest.mark.parametrize("jobs", [1, 3])
def test_results_keep_their_order_whatever_the_parallelism(tmp_path, monkeypatch, jobs):
    running, peak, lock = [0], [0], threading.Lock()

    def fake_run_one(exe, name, target, label, log, leak_check=False, env=None):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.05 if name == "memcheck" else 0.01)  # finish out of order
        with lock:
            running[0] -= 1
        return clean(label, name, log)

    monkeypatch.setattr(sanitize.tool, "find_sanitizer", lambda explicit=None: "compute-sanitizer")
    monkeypatch.setattr(sanitize, "run_one", fake_run_one)
    run = sanitize.sanitize_targets(VECADD, ["memcheck", "racecheck"], tmp_path, jobs=jobs, batch_size=1)
    assert [(r.label, r.tool) for r in run.results] == [
        (f"vecadd/{v}", t) for v in ("grid", "vectorized", "one_block") for t in ("memcheck", "racecheck")]
    if jobs == 1:
        assert peak[0] == 1
    else:
        assert peak[0] > 1  # they did overlap


def test_a_clean_batch_is_one_child_per_tool_and_reports_every_variant(tmp_path, fake_runs):
    calls, _ = fake_runs
    run = sanitize.sanitize_targets(VECADD, ["memcheck"], tmp_path, jobs=2)
    assert len(calls) == 1
    argv = calls[0][1]
    assert argv[argv.index("launch") + 1:argv.index("launch") + 3] == ["vecadd", "grid,vectorized,one_block"]
    assert [(r.label, r.clean, r.batched_with) for r in run.results] == [
        ("vecadd/grid", True, 2), ("vecadd/vectorized", True, 2), ("vecadd/one_block", True, 2)]
    assert len({r.seconds for r in run.results}) == 1 and run.results[0].seconds >= 0  # the batch's one child


def test_a_dirty_batch_is_run_again_one_variant_at_a_time(tmp_path, fake_runs):
    calls, bad = fake_runs
    bad.add("vectorized")
    progress = []
    run = sanitize.sanitize_targets(VECADD, ["memcheck"], tmp_path, jobs=2,
                                    progress=lambda step: progress.append((step.step, step.finished, step.total)))
    assert len(calls) == 1 + 3
    assert [(r.label, r.clean) for r in run.results] == [
        ("vecadd/grid", True), ("vecadd/vectorized", False), ("vecadd/one_block", True)]
    assert progress[0] == ("start", 0, 1) and progress[1] == ("done", 1, 1)
    assert progress[-1] == ("done", 4, 4)  # the bar's total grew by the re-runs


def test_plan_batches_one_family_at_a_time_and_keeps_users_variants_alone():
    targets = [*VECADD, LaunchTarget("vecadd", "mine", {"n": 4097}, add=("--add", "mine.cu")),
               LaunchTarget("matmul", "naive", {"m": 3, "n": 3, "k": 3})]
    jobs, skipped = plan_jobs(targets, ["memcheck", "racecheck"],
                              {("vecadd/grid", "racecheck"): "no shared memory (ptxas)"},
                              batch_size=2)
    assert [(j.label, j.tool) for j in jobs] == [
        ("vecadd/grid,vectorized", "memcheck"), ("vecadd/mine", "memcheck"), ("vecadd/one_block", "memcheck"),
        ("matmul/naive", "memcheck"),
        ("vecadd/mine", "racecheck"), ("vecadd/vectorized,one_block", "racecheck"), ("matmul/naive", "racecheck")]
    assert [(s.label, s.tool) for s in skipped] == [("vecadd/grid", "racecheck")]


@pytest.mark.parametrize(("cpus", "gpus", "jobs"),
                         [(16, 1, 16), (32, 1, 16), (2, 1, 2), (128, 8, 128), (64, 8, 64), (1, 0, 1)])
def test_default_jobs_is_one_per_cpu_at_most_sixteen_per_gpu(cpus, gpus, jobs):
    assert default_jobs(cpu_count=cpus, gpu_count=gpus) == jobs


def test_the_course_is_one_child_per_family_and_tool_by_default():
    families = catalog.load_all()
    targets = [LaunchTarget(f.name, v.name, {"n": 1}) for f in families for v in f.variants]
    tools = ["memcheck", "racecheck", "initcheck", "synccheck"]
    jobs, _ = plan_jobs(targets, tools)
    assert len(jobs) == len(families) * len(tools)
    assert {j.targets[0].family for j in jobs} == {f.name for f in families}


def test_slowest_tools_and_largest_batches_start_first(tmp_path, fake_runs):
    calls, _ = fake_runs
    targets = [*VECADD, LaunchTarget("matmul", "naive", {"m": 3, "n": 3, "k": 3})]
    run = sanitize.sanitize_targets(targets, ["synccheck", "memcheck", "racecheck"], tmp_path, jobs=1)
    started = [(name, argv[argv.index("launch") + 1], argv[argv.index("launch") + 2]) for name, argv in calls]
    assert started == [("racecheck", "vecadd", "grid,vectorized,one_block"),
                       ("memcheck", "vecadd", "grid,vectorized,one_block"),
                       ("racecheck", "matmul", "naive"), ("synccheck", "vecadd", "grid,vectorized,one_block"),
                       ("memcheck", "matmul", "naive"), ("synccheck", "matmul", "naive")]
    # ...while the results keep target-then-tool order.
    assert [(r.label, r.tool) for r in run.results][:3] == [
        ("vecadd/grid", "synccheck"), ("vecadd/grid", "memcheck"), ("vecadd/grid", "racecheck")]


def test_visible_gpu_count_follows_cuda_visible_devices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,3")
    assert gpu.visible_gpu_count() == 2
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert gpu.visible_gpu_count() == 0


def test_default_jobs_without_a_driver_to_ask_assumes_one_gpu(monkeypatch):
    from gpuprof.errors import EnvironmentProblem

    def no_driver() -> int:
        raise EnvironmentProblem("no NVIDIA driver found on this machine")

    monkeypatch.setattr(gpu, "visible_gpu_count", no_driver)
    assert default_jobs(cpu_count=64) == sanitize.JOBS_PER_GPU


@pytest.mark.nvcc
@pytest.mark.parametrize(("family", "variant", "uses"), [
    ("matmul", "naive", False), ("matmul", "smem_tiled", True), ("vecadd", "grid", False),
    ("reduce", "warp_shuffle", True), ("transpose", "naive", False), ("transpose", "smem_padded", True),
])
def test_ptxas_tells_which_variants_use_shared_memory(family, variant, uses):
    assert uses_shared_memory(catalog.load_family(family).variant(variant)) is uses


def test_vendor_and_triton_variants_are_never_skipped():
    softmax = catalog.load_family("softmax")
    assert uses_shared_memory(softmax.variant("torch")) is None
    assert uses_shared_memory(softmax.variant("triton")) is None


def test_without_nvcc_racecheck_runs_everywhere_and_says_why(monkeypatch):
    from gpuprof.errors import EnvironmentProblem

    def no_nvcc(*args, **kwargs):
        raise EnvironmentProblem("nvcc is not on PATH; install the CUDA toolkit")

    monkeypatch.setattr(sanitize_skips.nvcc, "compile_report", no_nvcc)
    fam = catalog.load_family("matmul")
    skips, notes = sanitize_skips.racecheck_skips([(fam, [fam.variant("naive")])], jobs=1)
    assert skips == set() and "nvcc is not on PATH" in notes[0]


def test_vendor_rows_skip_racecheck_and_synccheck_but_keep_memcheck_and_initcheck():
    from gpuprof.commands.sanitize_skips import VENDOR_SKIP_REASON, declared_skips

    vecadd = catalog.load_family("vecadd")
    tools = ["memcheck", "racecheck", "initcheck", "synccheck"]
    skips = declared_skips([(vecadd, vecadd.variants)], tools)
    vendors = [v.name for v in vecadd.variants if v.vendor]
    assert vendors
    assert set(skips) == {(f"vecadd/{name}", tool) for name in vendors for tool in ("racecheck", "synccheck")}
    targets = [LaunchTarget("vecadd", v.name, {"n": 4097}) for v in vecadd.variants]
    jobs, skipped = plan_jobs(targets, tools, skip=skips)
    for job in jobs:
        in_job = {t.variant for t in job.targets}
        assert not (in_job & set(vendors)) or job.tool in ("memcheck", "initcheck")
    assert {(s.label, s.tool, s.reason) for s in skipped} == {(label, tool, VENDOR_SKIP_REASON)
                                                              for label, tool in skips}
    assert declared_skips([(vecadd, vecadd.variants)], ["memcheck"]) == {}


def test_a_row_that_captures_a_cuda_graph_is_skipped_by_every_tool_and_says_why():
    from gpuprof.commands.sanitize_skips import GRAPH_SKIP_REASON, declared_skips

    mnist = catalog.load_family("mnist")
    tools = ["memcheck", "racecheck", "initcheck", "synccheck"]
    skips = declared_skips([(mnist, mnist.variants)], tools)
    captured = [v.name for v in mnist.variants if v.options.get("captures_cuda_graph")]
    assert captured  # the manifest declares it; no variant name is looked for
    for name in captured:
        assert all(skips[(f"mnist/{name}", tool)] == GRAPH_SKIP_REASON for tool in tools)
    hand = [v.name for v in mnist.variants if not v.vendor]
    assert hand and not any(key[0] == f"mnist/{hand[0]}" for key in skips)


@pytest.mark.parametrize("width", [80, 100, 160])
def test_the_skipped_line_names_each_reason_once_with_its_tools(width):
    from rich.console import Console

    from gpuprof.commands.sanitize import SanitizeRun
    from gpuprof.commands.sanitize_skips import GRAPH_SKIP_REASON, declared_skips
    from gpuprof.render.sanitize_view import skipped_line

    fams = [(f, f.variants) for f in catalog.load_all()]
    tools = ["memcheck", "racecheck", "initcheck", "synccheck"]
    skip = declared_skips(fams, tools, no_shared_memory={"vecadd/grid", "vecadd/one_block"})
    run = SanitizeRun([], [sanitize.Skipped(label, tool, reason) for (label, tool), reason in skip.items()])
    console = Console(width=width, record=True, color_system=None)
    console.print(skipped_line(run))
    text = " ".join(console.export_text().split())
    assert "…" not in text
    assert "racecheck skipped for 2 variant(s) with no shared memory (ptxas)" in text
    assert text.count(GRAPH_SKIP_REASON) == 1
    assert f"memcheck, racecheck, initcheck, synccheck skipped for 1 variant(s) with {GRAPH_SKIP_REASON}" in text
    assert "racecheck, synccheck skipped for" in text


@pytest.mark.nvcc
def test_the_triage_verdict_is_cached_and_nvcc_is_not_run_again(monkeypatch):
    variant = catalog.load_family("matmul").variant("smem_tiled")
    assert uses_shared_memory(variant) is True
    compiles = []

    def failing_compile(*args, **kwargs):
        compiles.append(args)
        return SimpleNamespace(returncode=1, stdout="", stderr="")

    monkeypatch.setattr(sanitize_skips.nvcc, "compile_report", failing_compile)
    assert uses_shared_memory(variant) is True and compiles == []
    # other defines are another compile: not answered from the cache
    assert uses_shared_memory(variant.with_defines({"TILE": 8})) is None and len(compiles) == 1


def test_the_triage_key_follows_the_source_its_headers_and_the_compile(tmp_path):
    from gpuprof.commands.sanitize_triage_cache import key, source_digest

    (tmp_path / "common.cuh").write_text("#define TILE 16\n")
    source = tmp_path / "k.cu"
    source.write_text('#include <cuda_runtime.h>\n#include "common.cuh"\n__global__ void k() {}\n')
    nvcc = tmp_path / "nvcc"
    nvcc.write_text("#!/bin/sh\n")
    first = key(source, {}, ("k",), "sm_90", str(nvcc))
    assert first is not None and first == key(source, {}, ("k",), "sm_90", str(nvcc))
    assert key(source, {"TILE": 8}, ("k",), "sm_90", str(nvcc)) != first
    assert key(source, {}, ("k",), "sm_80", str(nvcc)) != first
    assert key(source, {}, ("k", "k2"), "sm_90", str(nvcc)) != first
    (tmp_path / "common.cuh").write_text("#define TILE 32\n")  # a header changed: another key
    assert key(source, {}, ("k",), "sm_90", str(nvcc)) != first
    nvcc.write_text("#!/bin/sh\n# a new toolkit\n")
    assert key(source, {}, ("k",), "sm_90", str(nvcc)) != first
    (tmp_path / "common.cuh").unlink()  # a quoted header not beside the source: never cached
    assert source_digest(source) is None


def test_a_corrupt_triage_entry_is_a_miss(tmp_path):
    from gpuprof.commands import sanitize_triage_cache

    sanitize_triage_cache.save("abc", True)
    assert sanitize_triage_cache.load("abc") is True
    (sanitize_triage_cache.folder() / "abc.json").write_text("{broken")
    assert sanitize_triage_cache.load("abc") is None
    (sanitize_triage_cache.folder() / "abc.json").write_text('{"uses_shared_memory": "yes"}')
    assert sanitize_triage_cache.load("abc") is None
