"""nsys argv builders, finding nsys, and the nsys core on recorded `nsys` output (no GPU, no nsys)."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from gpuprof.commands import nsys as nsys_profile
from gpuprof.commands import nsys_results, nsys_summaries, nsys_torch_fallback
from gpuprof.commands.nsys import NsysRequest
from gpuprof.commands.target import Target
from gpuprof.errors import EnvironmentProblem, InputError, ParseError, UsageError
from gpuprof.parsers import nsys_sqlite
from gpuprof.parsers import nsys_stats as ns
from gpuprof.tools import _proc
from gpuprof.tools import nsys as tools
from gpuprof.tools.target import LaunchTarget
from gpuprof.variants import catalog
from tests.nsys_fakes import (
    EIGHT_REPORTS,
    PROFILE_IMPORTER_FAILED,
    SQLITE,
    fake_nsys,  # noqa: F401  (the `fake` fixture)
)

VECADD_GRID_STATS = (
    "Generating SQLite file /tmp/r/b/vecadd-grid.sqlite from /tmp/r/b/vecadd-grid.nsys-rep\n"
    "Processing [/tmp/r/b/vecadd-grid.sqlite] with [/opt/nvidia/nsight-compute/2025.3.1/host/"
    "target-linux-x64/reports/cuda_gpu_kern_sum.py]... \n"
    "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
    "83.2,552203,1,552203.0,552203.0,552203,552203,0.0,\"void init_curand<curand_pseudo_state<curandStateX"
    "ORWOW>>(long, unsigned long, long)\"\n"
    "5.8,38688,2,19344.0,19344.0,18336,20352,1425.5,\"void execute_dist<random_uniform_float_functor,"
    " curand_pseudo_state<curandStateXORWOW>, float, >(long, long, long, long, T4...)\"\n"
    "2.0,13024,2,6512.0,6512.0,6432,6592,113.1,cupy_multiply__float64_float32_float64\n"
    "1.9,12608,2,6304.0,6304.0,6272,6336,45.3,cupy_subtract__float64_float64_float64\n"
    "1.9,12577,2,6288.5,6288.5,6273,6304,21.9,cupy_add__float64_float64_float64\n"
    "1.9,12480,3,4160.0,3808.0,3744,4928,665.9,vecadd_grid\n"
    "1.9,12416,2,6208.0,6208.0,6144,6272,90.5,cupy_copy__float64_float32\n"
    "0.9,6016,1,6016.0,6016.0,6016,6016,0.0,cupy_copy__float_float32\n"
    "0.6,3904,4,976.0,976.0,960,992,18.5,cupy_fill\n"
    "\n"
    "Processing [/tmp/r/b/vecadd-grid.sqlite] with [/opt/nvidia/nsight-compute/2025.3.1/host/"
    "target-linux-x64/reports/cuda_gpu_mem_time_sum.py]... \n"
    "Time (%),Total Time (ns),Count,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Operation\n"
    "100.0,4384,1,4384.0,4384.0,4384,4384,0.0,[CUDA memset]\n"
    "\n"
    "Processing [/tmp/r/b/vecadd-grid.sqlite] with [/opt/nvidia/nsight-compute/2025.3.1/host/"
    "target-linux-x64/reports/cuda_api_sum.py]... \n"
    "Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
    "94.1,133705814,7,19100830.6,126000.0,12759,133000090,50224881.5,cudaMalloc\n"
    "3.4,4838195,1,4838195.0,4838195.0,4838195,4838195,0.0,cuLibraryLoadData\n"
    "1.3,1838161,3,612720.3,39670.0,12265,1786226,1016378.1,cudaLaunchKernel\n"
    "0.6,880104,7,125729.1,110696.0,91789,211219,42072.0,cuModuleLoadData\n"
    "0.2,233322,3,77774.0,69032.0,61130,103160,22337.1,cuModuleUnload\n"
    "0.2,226429,16,14151.8,9119.5,5744,39937,10615.1,cuLaunchKernel\n"
    "0.1,164609,1,164609.0,164609.0,164609,164609,0.0,cudaStreamCreateWithPriority\n"
    "0.1,118185,457,258.6,204.0,119,6223,302.1,cuGetProcAddress_v2\n"
    "0.0,65171,1,65171.0,65171.0,65171,65171,0.0,cudaMemGetInfo\n"
    "0.0,48019,1,48019.0,48019.0,48019,48019,0.0,cudaMemsetAsync\n"
    "0.0,19355,1,19355.0,19355.0,19355,19355,0.0,cudaStreamDestroy\n"
    "0.0,10202,1,10202.0,10202.0,10202,10202,0.0,cudaStreamSynchronize\n"
    "0.0,7211,2,3605.5,3605.5,2825,4386,1103.8,cuInit\n"
    "0.0,2517,2,1258.5,1258.5,553,1964,997.7,cuLibraryGetKernel\n"
    "0.0,2395,3,798.3,810.0,645,940,147.8,cuKernelGetName\n"
    "0.0,1635,2,817.5,817.5,145,1490,951.1,cuModuleGetLoadingMode\n"
    "0.0,453,1,453.0,453.0,453,453,0.0,cudaGetDeviceProperties_v12000\n"
    "\n"
    "Processing [/tmp/r/b/vecadd-grid.sqlite] with [/opt/nvidia/nsight-compute/2025.3.1/host/"
    "target-linux-x64/reports/nvtx_sum.py]... \n"
    "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Style,Range\n"
    "51.4,116531,3,38843.7,18017.0,14296,84218,39339.3,PushPop,:vecadd\n"
    "48.6,110191,3,36730.3,16840.0,12874,80477,37937.6,PushPop,:grid\n"
    "\n"
)
# `nsys stats --force-export=true ... vecadd-grid.sqlite` there: stdout, then stderr.
STATS_SQLITE_FORCE_EXPORT = (
    "ERROR: Cannot force export of SQLite data from .sqlite input file.\n",
    "\nusage: nsys stats [<args>] <input-file>\nTry 'nsys stats --help' for more information.\n",
)



def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


# --- argv builders ---------------------------------------------------------------------------------


def test_profile_argv_traces_cuda_and_nvtx_only_and_overwrites():
    target = LaunchTarget("vecadd", "grid", {"n": 1024}, count=3).argv()
    argv = tools.profile_argv("/x/nsys", Path("/runs/vecadd-grid"), target)
    assert argv[:2] == ["/x/nsys", "profile"]
    flags = argv[2 : len(argv) - len(target)]
    assert flags == ["--trace=cuda,nvtx", "--sample=none", "--cpuctxsw=none", "--output=/runs/vecadd-grid",
                     "--force-overwrite=true"]
    assert argv[-len(target) :] == target  # the child comes last, untouched
    assert "-f" not in argv and "-o" not in argv  # short flags differ between nsys verbs
    assert "--trace=cuda" in tools.profile_argv("n", Path("b"), ["a"], trace="cuda")


def test_stats_argv_always_forces_the_export_and_asks_four_csv_reports_on_stdout():
    argv = tools.stats_argv("/x/nsys", Path("/runs/r.nsys-rep"))
    assert argv[:2] == ["/x/nsys", "stats"] and argv[-1] == "/runs/r.nsys-rep"
    assert "--force-export=true" in argv
    assert argv[argv.index("--report") + 1] == "cuda_gpu_kern_sum,cuda_gpu_mem_time_sum,cuda_api_sum,nvtx_sum"
    assert argv[argv.index("--format") + 1] == "csv" and argv[argv.index("--output") + 1] == "-"
    assert "-f" not in argv and "--sqlite" not in argv
    with_export = tools.stats_argv("n", Path("/elsewhere/r.nsys-rep"), sqlite=Path("/runs/r.sqlite"))
    assert with_export[with_export.index("--sqlite") + 1] == "/runs/r.sqlite"


def test_stats_of_an_sqlite_export_forces_no_export():
    argv = tools.stats_argv("/x/nsys", Path("/runs/r.sqlite"))
    assert "--force-export=true" not in argv and argv[-1] == "/runs/r.sqlite"


def test_several_reports_on_stdout_split_into_tables_by_their_processing_lines():
    # The recorded stdout of one `nsys stats --report a,b,... --output -` (not -q): each CSV block
    # follows a "Processing [...] with [<report>.py]" line, so every asked report is found by name.
    stats = ns.parse_stats(EIGHT_REPORTS)
    assert set(tools.REPORTS) <= {r.name for r in stats.reports}
    assert all(stats.report(name).records for name in tools.REPORTS)


def test_export_path_stays_in_the_run_directory(tmp_path):
    assert tools.export_path(Path("/home/u/old.nsys-rep"), tmp_path) == tmp_path / "old.sqlite"
    assert tools.export_path(Path("/home/u/old.sqlite"), tmp_path) is None  # nothing to export


# --- finding nsys ----------------------------------------------------------------------------------


@pytest.fixture
def bare(monkeypatch, tmp_path):
    """No nsys and no ncu anywhere: PATH, $CUDA_HOME and /opt/nvidia all point at empty folders."""
    for name in ("bin", "cuda", "opt"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(tools, "OPT_NVIDIA", tmp_path / "opt")
    return tmp_path


def test_nsys_on_path(bare):
    nsys = executable(bare / "bin" / "nsys")
    assert tools.find_nsys() == str(nsys)


def test_explicit_nsys_wins_and_a_bad_one_is_exit_2(bare):
    executable(bare / "bin" / "nsys")
    mine = executable(bare / "mine" / "nsys")
    assert tools.find_nsys(str(mine)) == str(mine)
    (bare / "plain").write_text("")
    for bad in (bare / "plain", bare / "missing"):
        with pytest.raises(UsageError) as err:  # a bad flag value, not the machine (issue 27)
            tools.find_nsys(str(bad))
        assert err.value.exit_code == 2 and f"--nsys {bad}" in err.value.message


def test_bundle_next_to_the_real_ncu_behind_a_symlink(bare):
    install = bare / "nvidia" / "nsight-compute" / "2025.3.1"
    executable(install / "ncu")
    bundled = executable(install / "host" / "target-linux-x64" / "nsys")
    (bare / "bin" / "ncu").symlink_to(install / "ncu")  # like /usr/local/cuda/bin/ncu
    assert tools.find_nsys() == str(bundled)


def test_bundle_by_glob_newest_version_first(bare):
    for version in ("2024.3.2", "2025.3.1", "2025.10.0"):
        executable(bare / "opt" / "nsight-compute" / version / "host" / "target-linux-x64" / "nsys")
    assert "/2025.10.0/" in tools.find_nsys()


def test_bundle_under_cuda_home(bare):
    bundled = executable(bare / "cuda" / "nsight-compute-2025.3.1" / "host" / "target-linux-x64" / "nsys")
    assert tools.find_nsys() == str(bundled)


def test_standalone_nsight_systems_before_the_bundle(bare):
    executable(bare / "opt" / "nsight-compute" / "2025.3.1" / "host" / "target-linux-x64" / "nsys")
    full = executable(bare / "cuda" / "nsight-systems-2025.3.2" / "bin" / "nsys")
    assert tools.find_nsys() == str(full)


def test_missing_nsys_says_where_it_looked_and_what_to_do(bare):
    with pytest.raises(EnvironmentProblem) as err:
        tools.find_nsys()
    assert err.value.exit_code == 3
    assert "not found" in err.value.message and "--nsys PATH" in err.value.message
    assert "host/target-linux-x64/nsys" in err.value.message


def test_env_puts_the_importer_libraries_first(monkeypatch, tmp_path):
    monkeypatch.delenv(tools.LIBS_ENV, raising=False)
    monkeypatch.setenv("LD_LIBRARY_PATH", "/usr/lib/a")
    assert tools.nsys_env() is None  # nothing to add: nsys inherits the environment unchanged
    monkeypatch.setenv(tools.LIBS_ENV, f"/carried/elf{os.pathsep}/more")
    env = tools.nsys_env(tmp_path)
    assert env["LD_LIBRARY_PATH"].split(os.pathsep) == [str(tmp_path), "/carried/elf", "/more", "/usr/lib/a"]
    assert env["PATH"] == os.environ["PATH"]


# --- profiling a family through (recorded) nsys ----------------------------------------------------


def vecadd():
    fam = catalog.load_family("vecadd")
    return fam, fam.select("grid,vectorized"), {"n": 1 << 20}


def test_one_nsys_run_per_variant_each_launching_only_that_variant(fake, tmp_path):
    f = fake()
    fam, variants, size = vecadd()
    steps = []
    out = nsys_profile.profile_family(fam, variants, size, tmp_path / "runs", "/x/nsys", progress=steps.append)
    profiles, stats = f.argvs("profile"), f.argvs("stats")
    assert len(profiles) == len(stats) == 2
    for v, argv in zip(variants, profiles):
        child = LaunchTarget("vecadd", v.name, size, count=3).argv()
        assert argv[-len(child) :] == child
        assert f"--output={tmp_path / 'runs' / f'vecadd-{v.name}'}" in argv
    assert [a[-1] for a in stats] == [str(tmp_path / "runs" / f"vecadd-{v.name}.nsys-rep") for v in variants]
    assert all("--force-export=true" in a for a in stats)
    assert [s.label for s in out.summaries] == ["grid", "vectorized"]  # one summary per variant
    kern = out.summary("grid").kernels
    assert kern[0].name == "fma_fp32(float *, int, int)" and sum(k.instances for k in kern) == 10
    assert out.summary("grid").api and out.summary("grid").memcpy and out.summary("grid").nvtx
    assert all(p.parent == tmp_path / "runs" for s in out.summaries for p in s.artifacts)
    assert (tmp_path / "runs" / "vecadd-grid.stats.txt").read_text().startswith("Generating SQLite")
    assert [(p.variant, p.step) for p in steps][-1] == ("vectorized", "done")
    assert not out.failed and out.source == "nsys"


def test_recorded_h100_run_shows_the_variant_launched_count_times_inside_its_ranges(fake, tmp_path):
    fake(stats=VECADD_GRID_STATS)
    fam, variants, size = vecadd()
    (grid,) = nsys_profile.profile_family(fam, variants[:1], size, tmp_path, "/x/nsys").summaries
    kernels = {k.name: k for k in grid.kernels}
    assert kernels["vecadd_grid"].instances == nsys_profile.COUNT  # --count 3, no warm-up launches
    ranges = {r.range: r for r in grid.nvtx}
    assert set(ranges) == {":vecadd", ":grid"}  # family -> variant, default domain
    assert ranges[":vecadd"].instances == ranges[":grid"].instances == nsys_profile.COUNT
    assert ranges[":grid"].total_ns < ranges[":vecadd"].total_ns  # the variant range is nested
    api = {a.name: a for a in grid.api}
    assert api["cudaLaunchKernel"].num_calls + api["cuLaunchKernel"].num_calls >= sum(k.instances for k in grid.kernels)
    assert [m.operation for m in grid.memcpy] == ["[CUDA memset]"]  # inputs are made on the GPU: no copies


def test_importer_failure_is_an_environment_problem_not_no_kernels(fake, tmp_path):
    fake(profile=PROFILE_IMPORTER_FAILED)
    fam, variants, size = vecadd()
    with pytest.raises(EnvironmentProblem) as err:
        nsys_profile.profile_family(fam, variants, size, tmp_path, "/x/nsys")
    msg = err.value.message
    assert err.value.exit_code == 3 and "\n" not in msg
    assert "libdw.so.1" in msg and "libelf.so.1" in msg and "LD_LIBRARY_PATH" in msg
    assert "kernel" not in msg.lower()


def test_a_crashing_or_hanging_variant_is_reported_and_the_others_still_run(fake, tmp_path):
    f = fake(exit_codes={"vecadd-grid": 1}, hang={"vecadd-vectorized"})
    fam = catalog.load_family("vecadd")
    out = nsys_profile.profile_family(fam, fam.select("grid,vectorized,one_block"), {"n": 4096}, tmp_path, "/x/nsys")
    grid, vec, block = out.summaries
    assert "exited with code 1" in grid.error and grid.kernels  # what ran before the failure is kept
    assert "did not finish" in vec.error and not vec.kernels
    assert block.error is None and block.kernels
    assert [s.label for s in out.failed] == ["grid", "vectorized"]
    assert len(f.argvs("profile")) == 3


def test_no_report_generated_is_that_variants_error(fake, tmp_path):
    fake(profile="profile workload OK\nProcessing events...\nGenerated:\n\tNo reports were generated\n")
    fam, variants, size = vecadd()
    out = nsys_profile.profile_family(fam, variants[:1], size, tmp_path, "/x/nsys")
    assert "No reports were generated" in out.summaries[0].error


def test_skipped_reports_become_empty_tables_with_the_reason(fake, tmp_path):
    memcpy_block = r"(Processing \[[^\]]*\] with \[[^\]]*cuda_gpu_mem_time_sum\.py\]\.\.\. \n)[^\n]*\n(?:[^\n]+\n)*"
    no_memcpy = re.sub(memcpy_block, r"\1SKIPPED: rep.sqlite does not contain CUDA memory operations data.\n",
                       EIGHT_REPORTS)
    fake(stats=no_memcpy)
    fam, variants, size = vecadd()
    (s,) = nsys_profile.profile_family(fam, variants[:1], size, tmp_path, "/x/nsys").summaries
    assert s.memcpy == () and s.kernels and s.error is None
    assert any("does not contain CUDA memory operations" in n for n in s.notes)


def test_command_is_passed_verbatim_and_its_report_stays_in_the_run_directory(fake, tmp_path):
    f = fake()
    argv = [sys.executable, "app.py", "--size", "4", "-o", "x"]
    out = nsys_profile.profile_command(argv, tmp_path, "/x/nsys")
    (profile_argv,) = f.argvs("profile")
    assert profile_argv[-len(argv) :] == argv
    base = Path(next(a for a in profile_argv if a.startswith("--output=")).split("=", 1)[1])
    assert base.parent == tmp_path and base.name.startswith("command-python")
    assert out.summaries[0].label == " ".join(argv) and out.command == tuple(argv)


# --- importing reports -----------------------------------------------------------------------------


def test_sqlite_export_without_nsys_matches_nsys_stats_of_the_same_program():
    # The export and the 8-report stdout are two runs of the same program (sidecars): the same kernels,
    # the same launch counts, the same NVTX ranges.
    s = nsys_summaries.sqlite_summary(SQLITE)
    stats = ns.parse_stats(EIGHT_REPORTS)
    csv_kern = {k.name: k.instances for k in stats.report("cuda_gpu_kern_sum").records}
    assert {k.name: k.instances for k in s.kernels} == csv_kern
    launches = nsys_sqlite.read_sqlite_kernels(SQLITE)
    assert sum(k.total_ns for k in s.kernels) == sum(k.duration_ns for k in launches)
    assert [k.total_ns for k in s.kernels] == sorted((k.total_ns for k in s.kernels), reverse=True)
    for k in s.kernels:
        assert k.min_ns <= k.med_ns <= k.max_ns and k.avg_ns * k.instances == pytest.approx(k.total_ns)
    assert sum(k.time_pct for k in s.kernels) == pytest.approx(100, abs=0.5)
    csv_nvtx = {(r.range, r.style, r.instances) for r in stats.report("nvtx_sum").records}
    assert {(r.range, r.style, r.instances) for r in s.nvtx} == csv_nvtx
    assert s.memcpy is None and s.api is None and any("need nsys" in n for n in s.notes)


def test_import_sqlite_without_nsys_never_runs_a_tool(monkeypatch, tmp_path, bare):
    monkeypatch.setattr(_proc, "run", lambda *a, **k: pytest.fail("no tool may run"))
    out = nsys_profile.execute(NsysRequest(Target(import_path=SQLITE), out_dir=tmp_path / "o"))
    assert out.source == "sqlite" and out.summaries[0].kernels


def test_import_nsys_rep_writes_its_export_into_the_run_directory(fake, tmp_path):
    f = fake()
    report = executable(tmp_path / "elsewhere" / "old.nsys-rep")
    out = nsys_profile.import_report(report, tmp_path / "runs", "/x/nsys")
    (argv,) = f.argvs("stats")
    assert argv[argv.index("--sqlite") + 1] == str(tmp_path / "runs" / "old.sqlite") and argv[-1] == str(report)
    assert (tmp_path / "runs" / "old.stats.txt").is_file() and not (tmp_path / "elsewhere" / "old.sqlite").exists()
    assert out.summaries[0].kernels


def test_import_sqlite_with_nsys_and_a_stats_error_is_one_line_exit_3(fake, tmp_path):
    f = fake(stats=STATS_SQLITE_FORCE_EXPORT, stats_exit=1)
    with pytest.raises(EnvironmentProblem) as err:
        nsys_profile.import_report(SQLITE, tmp_path / "runs", "/x/nsys")
    (argv,) = f.argvs("stats")
    assert "--force-export=true" not in argv and "--sqlite" not in argv and argv[-1] == str(SQLITE)
    assert err.value.exit_code == 3 and "Cannot force export" in err.value.message and "\n" not in err.value.message


def test_import_needs_nsys_for_a_nsys_rep(bare, tmp_path):
    report = executable(tmp_path / "r.nsys-rep")
    with pytest.raises(EnvironmentProblem, match="not found"):
        nsys_profile.execute(NsysRequest(Target(import_path=report), out_dir=tmp_path / "o"))


@pytest.mark.parametrize("name, why", [("r.qdstrm", "raw recording"), ("r.txt", "expected a .nsys-rep"),
                                       ("gone.sqlite", "no such file")])
def test_import_refuses_what_it_cannot_read(tmp_path, name, why):
    path = tmp_path / name
    if not name.startswith("gone"):
        path.write_text("x")
    with pytest.raises(InputError, match=why) as err:
        nsys_profile.import_report(path, tmp_path / "o", None)
    assert err.value.exit_code == 2


# --- requests --------------------------------------------------------------------------------------


@pytest.mark.parametrize("target, why", [
    (Target(), "give one of"),
    (Target(families=("vecadd",), command=("ls",)), "give one of"),
    (Target(families=("vecadd",), import_path=SQLITE), "give one of"),
    (Target(command=("ls",), variants="grid"), "go with a FAMILY"),
    (Target(families=("vecadd",), unexpected=("./app",)), "after --"),
    (Target(families=("no_such_family",)), "unknown family"),
    (Target(families=("vecadd",), variants="nope"), "unknown variant"),
    (Target(families=("vecadd",), size="12x"), "bad size"),
    (Target(command=("/no/such/program",)), "neither on PATH"),
])
def test_bad_requests_are_usage_errors_before_any_tool_runs(monkeypatch, tmp_path, target, why):
    monkeypatch.setattr(_proc, "run", lambda *a, **k: pytest.fail("no tool may run"))
    with pytest.raises(UsageError, match=why) as err:
        nsys_profile.execute(NsysRequest(target))
    assert err.value.exit_code == 2


def test_out_dir_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(UsageError, match="is a file"):
        nsys_results.prepare_out_dir(tmp_path / "f")


# --- the PyTorch-profiler fallback -----------------------------------------------------------------


def chrome_trace(path: Path, variant: str = "grid") -> Path:
    """A torch.profiler Chrome trace of the shape Kineto writes: complete events, times in µs."""
    def x(cat, name, ts, dur):
        return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": {}}
    events = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "ts": 0, "args": {"name": "python"}},
        x("user_annotation", "vecadd", 0.0, 900.5),
        x("user_annotation", variant, 1.0, 898.25),
        x("cuda_runtime", "cudaMalloc", 2.0, 120.0),
        x("cuda_runtime", "cudaMemcpyAsync", 130.0, 12.5),
        x("cuda_driver", "cuLaunchKernel", 150.0, 5.25),
        x("cuda_driver", "cuLaunchKernel", 160.0, 4.75),
        x("cuda_driver", "cuLaunchKernel", 170.0, 4.5),
        x("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 140.0, 80.0),
        x("gpu_memset", "Memset (Device)", 230.0, 1.5),
        x("kernel", f"vecadd_{variant}", 300.0, 10.5),
        x("kernel", f"vecadd_{variant}", 320.0, 10.25),
        x("kernel", f"vecadd_{variant}", 340.0, 10.75),
        x("kernel", "cupy_random_uniform", 250.0, 3.0),
        x("cpu_op", "aten::empty", 5.0, 1.0),
        x("gpu_user_annotation", variant, 300.0, 51.0),  # GPU-side copy of a range: not counted twice
        x("overhead", "Instrumentation", 0.5, 0.25),
        {"ph": "f", "cat": "ac2g", "name": "ac2g", "pid": 1, "tid": 1, "ts": 300.0, "id": 7},
    ]
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


def test_trace_summary_has_the_nsys_shape(tmp_path):
    s = nsys_torch_fallback.trace_summary(chrome_trace(tmp_path / "t.trace.json"), "grid")
    (main, other) = s.kernels
    assert (main.name, main.instances, main.total_ns) == ("vecadd_grid", 3, 31500.0)
    assert (main.min_ns, main.med_ns, main.max_ns) == (10250.0, 10500.0, 10750.0)
    assert main.time_pct == pytest.approx(100 * 31500 / 34500, abs=0.05) and other.instances == 1
    assert {m.operation: m.count for m in s.memcpy} == {"Memcpy HtoD (Pageable -> Device)": 1, "Memset (Device)": 1}
    assert {a.name: a.num_calls for a in s.api} == {"cudaMalloc": 1, "cudaMemcpyAsync": 1, "cuLaunchKernel": 3}
    assert [(r.name, r.domain, r.total_ns) for r in s.nvtx] == [("vecadd", None, 900500.0), ("grid", None, 898250.0)]
    assert s.artifacts == (tmp_path / "t.trace.json",)


def test_trace_with_a_bad_duration_is_a_parse_error(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "dur": "n/a"}]}))
    with pytest.raises(ParseError, match="expected a duration"):
        nsys_torch_fallback.trace_summary(path, "k")
    path.write_text('{"traceEvents": [')
    with pytest.raises(ParseError, match="not JSON"):
        nsys_torch_fallback.trace_summary(path, "k")


@pytest.fixture
def torch_stand_in(monkeypatch):
    """The fallback without a GPU: torch 'is there', and recording writes a Kineto-shaped trace."""
    recorded = []

    def record(run, trace, ranges):
        recorded.append(ranges)
        return chrome_trace(trace, ranges[-1])

    monkeypatch.setattr(nsys_torch_fallback, "_torch_version", lambda missing: "2.9.0+cu130")
    monkeypatch.setattr(nsys_torch_fallback, "record_torch_trace", record)
    return recorded


def test_without_nsys_a_family_falls_back_to_the_pytorch_profiler(bare, tmp_path, torch_stand_in, monkeypatch):
    monkeypatch.setattr(_proc, "run", lambda *a, **k: pytest.fail("no tool may run"))
    out = nsys_profile.execute(NsysRequest(Target(families=("vecadd",), variants="grid,vectorized", size="4096"),
                                           out_dir=tmp_path / "o"))
    assert out.source == "torch" and "torch.profiler 2.9.0+cu130" in out.tool
    assert "nsys was not found" in out.notice and "PyTorch profiler" in out.notice
    assert torch_stand_in == [("vecadd", "grid"), ("vecadd", "vectorized")]  # the NVTX nesting, as ranges
    assert [s.artifacts for s in out.summaries] == [(tmp_path / "o" / "vecadd-grid.trace.json",),
                                                   (tmp_path / "o" / "vecadd-vectorized.trace.json",)]
    assert out.summary("vectorized").kernels[0].name == "vecadd_vectorized"


def test_without_nsys_a_command_cannot_fall_back(bare, tmp_path, torch_stand_in):
    with pytest.raises(EnvironmentProblem, match="runs only Python programs") as err:
        nsys_profile.execute(NsysRequest(Target(command=(sys.executable, "-c", "pass")), out_dir=tmp_path))
    assert err.value.exit_code == 3 and not torch_stand_in


def test_an_explicit_bad_nsys_does_not_fall_back(bare, tmp_path, torch_stand_in):
    with pytest.raises(UsageError, match="--nsys"):
        nsys_profile.execute(NsysRequest(Target(families=("vecadd",)), nsys=str(tmp_path / "nope"), out_dir=tmp_path))
    assert not torch_stand_in


def test_fallback_needs_torch(bare, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    with pytest.raises(EnvironmentProblem, match="PyTorch.*not installed"):
        nsys_profile.execute(NsysRequest(Target(families=("vecadd",)), out_dir=tmp_path))


# --- JSON ------------------------------------------------------------------------------------------


def test_json_keeps_times_in_ns_and_paths_as_text(fake, tmp_path):
    fake()
    fam, variants, size = vecadd()
    out = nsys_profile.profile_family(fam, variants, size, tmp_path / "runs", "/x/nsys")
    data = json.loads(nsys_results.save_profile(out, tmp_path / "p.json").read_text())
    assert data["schema"] == "gpuprof.nsys" and data["schema_version"] == 1
    assert data["gpuprof_nsys_schema"] == 1 and data["family"] == "vecadd" and data["size"] == size
    grid = data["summaries"][0]
    assert grid["label"] == "grid" and grid["kernels"][0]["total_ns"] == 78977.0
    assert all(isinstance(p, str) for p in grid["artifacts"])
