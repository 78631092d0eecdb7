"""`gpuprof sanitize -- COMMAND` on programs gpuprof did not write: the child's environment (pools
off through a sitecustomize that chains to any other, CuPy keeping its sources), NVRTC's hashed
file names mapped back to source lines, and counts that say one consistent thing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from rich.console import Console

from gpuprof.commands import sanitize
from gpuprof.commands.sanitize import SanitizeResult, SanitizeRun, run_one
from gpuprof.commands.sanitize_sources import SourceFinder, python_scripts
from gpuprof.render.sanitize_view import command_table, families_table, findings_view, short_kernel
from gpuprof.tools import sanitizer as tool

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tools"
HASH = "0ee97cbd80337c2b5d4b2f1e8c0a9d6e4f3b2a19"

# ---------------------------------------------------------------- the child's environment


def test_child_env_for_a_users_program(tmp_path):
    env = tool.child_env(cupy_cache_dir=tmp_path, base={"PYTHONPATH": "/their/lib", "HOME": "/h"})
    assert env["PYTHONPATH"].split(os.pathsep) == [str(tool.SITE_DIR), "/their/lib"]
    assert env["PYTORCH_NO_CUDA_MEMORY_CACHING"] == "1"
    assert env["CUPY_CACHE_DIR"] == str(tmp_path)
    assert env["CUPY_CACHE_SAVE_CUDA_SOURCE"] == "1" and env["CUPY_CUDA_COMPILE_WITH_DEBUG"] == "1"
    assert env["HOME"] == "/h"
    assert env["TORCHINDUCTOR_COMPILE_THREADS"] == "1"  # no pool of compile workers, each under the tool
    assert tool.child_env(base={"TORCHINDUCTOR_COMPILE_THREADS": "4"})["TORCHINDUCTOR_COMPILE_THREADS"] == "4"


def test_child_env_for_gpuprofs_own_children_keeps_cupys_cache():
    env = tool.child_env(base={})
    assert env["PYTHONPATH"] == str(tool.SITE_DIR)
    assert "CUPY_CACHE_DIR" not in env  # built-ins compile once into gpuprof's cache; their files are real


def test_site_dir_holds_the_sitecustomize():
    assert (tool.SITE_DIR / "sitecustomize.py").is_file()


FAKE_CUPY = '''\
import sys
class _Cuda:
    calls = []
    def set_allocator(self, a): self.calls.append(("allocator", a))
    def set_pinned_memory_allocator(self, a): self.calls.append(("pinned", a))
cuda = _Cuda()
'''

PROGRAM = '''\
import os, sitecustomize
print("chained:", os.environ.get("THEIR_SITE_RAN"))
import cupy
print("calls:", cupy.cuda.calls)
'''


def run_child(tmp_path: Path, their_site: bool) -> str:
    lib = tmp_path / "lib"
    (lib / "cupy").mkdir(parents=True)
    (lib / "cupy" / "__init__.py").write_text(FAKE_CUPY)
    if their_site:
        (lib / "sitecustomize.py").write_text("import os\nos.environ['THEIR_SITE_RAN'] = 'yes'\n")
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    env = tool.child_env(cupy_cache_dir=tmp_path / "cache", base={"PYTHONPATH": str(lib), "PATH": os.environ["PATH"]})
    done = subprocess.run([sys.executable, str(prog)], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_sitecustomize_turns_cupys_pools_off_when_cupy_is_imported(tmp_path):
    out = run_child(tmp_path, their_site=False)
    assert "calls: [('allocator', None), ('pinned', None)]" in out
    assert "chained: None" in out


def test_sitecustomize_chains_to_the_one_it_shadows(tmp_path):
    out = run_child(tmp_path, their_site=True)
    assert "chained: yes" in out
    assert "calls: [('allocator', None), ('pinned', None)]" in out


# ---------------------------------------------------------------- hashed NVRTC names -> source

KERNEL = textwrap.dedent("""\
    extern "C" __global__ void write_past(float* x, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i <= n) x[i] = 1.0f;
    }
    """)


def fake_cache(tmp_path: Path) -> Path:
    cache = tmp_path / "cupy-cache"
    cache.mkdir()
    (cache / f"{HASH}.cubin").write_bytes(b"\0")
    (cache / f"{HASH}.cubin.cu").write_text(KERNEL)
    return cache


def test_hashed_name_maps_to_the_saved_source_line(tmp_path):
    place = SourceFinder([fake_cache(tmp_path)], cwd=tmp_path).locate(f"{HASH}.cubin.cu", 3)
    assert place.text == "if (i <= n) x[i] = 1.0f;"
    assert place.file == f"cupy-cache/{HASH}.cubin.cu" and place.line == 3
    assert place.compiled_as == f"{HASH}.cubin.cu:3"


def test_hashed_name_maps_on_to_the_programs_own_line(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text("import cupy\nsrc = r'''\n" + KERNEL + "'''\n")
    finder = SourceFinder([fake_cache(tmp_path)], python_scripts(["python", str(prog)]), cwd=tmp_path)
    place = finder.locate(f"/tmp/{HASH}.cubin.cu", 3)  # a path as printed with --strip-paths no
    assert (place.file, place.line, place.text) == ("prog.py", 5, "if (i <= n) x[i] = 1.0f;")
    assert place.compiled_as == f"{HASH}.cubin.cu:3"


def test_a_line_that_appears_twice_in_the_program_stays_in_the_cache_file(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text("a = '''\n" + KERNEL + "'''\nb = '''\n" + KERNEL + "'''\n")
    place = SourceFinder([fake_cache(tmp_path)], [prog], cwd=tmp_path).locate(f"{HASH}.cubin.cu", 3)
    assert place.file.endswith(".cubin.cu")


def test_builtin_file_names_resolve_in_the_family_folder_first(tmp_path):
    from gpuprof.variants.catalog import kernels_root

    finder = SourceFinder([kernels_root() / "transpose", kernels_root().parent])
    place = finder.locate("smem_tiled.cu", 1)
    assert place.text == "// transpose / smem_tiled"
    assert finder.locate("kernels/matmul/smem_tiled.cu", 1).text == "// matmul / smem_tiled"


def test_an_unknown_file_keeps_its_printed_place():
    place = SourceFinder([]).locate("gone.cu", 7)
    assert (place.file, place.line, place.text) == ("gone.cu", 7, None)


# ---------------------------------------------------------------- counts


def fixture_run(monkeypatch, tmp_path, name: str, tool_name: str, code: int) -> SanitizeResult:
    text = (FIXTURES / name).read_text() if name.endswith(".txt") else name
    monkeypatch.setattr(sanitize.tool, "run_tool", lambda argv, log, timeout_s=0, env=None: (code, text))
    return run_one("compute-sanitizer", tool_name, ["./app"], "app", tmp_path / "x.log")


def test_print_limit_run_says_printed_and_counted(monkeypatch, tmp_path):
    r = fixture_run(monkeypatch, tmp_path, "sanitizer_2025.3.1_memcheck_print_limit_exitcode.txt", "memcheck", 86)
    assert len(r.findings) == 3 and r.counted == 26 and r.truncated and not r.clean
    assert "only 3 of 26 printed" in r.mismatch


def test_racecheck_analysis_counts_agree(monkeypatch, tmp_path):
    r = fixture_run(monkeypatch, tmp_path, "sanitizer_2025.3.1_racecheck_default_analysis.txt", "racecheck", 86)
    assert len(r.findings) == 1 and r.counted == 1 and r.mismatch is None
    assert r.findings[0].count == 63 + 264


def test_hazard_cap_is_a_note_and_not_clean(monkeypatch, tmp_path):
    text = ("========= COMPUTE-SANITIZER\n========= Warning: Maximum number of hazards reached. Environment variable "
            "NV_COMPUTE_SANITIZER_MAX_RACECHECK_HAZARDS can be used to increase this count.\n"
            "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n")
    r = fixture_run(monkeypatch, tmp_path, text, "racecheck", 0)
    assert r.truncated and not r.clean and "Maximum number of hazards" in r.notes[0]


def test_a_log_without_a_summary_line_is_not_clean(monkeypatch, tmp_path):
    text = "========= COMPUTE-SANITIZER\nprogram output\n"
    r = fixture_run(monkeypatch, tmp_path, text, "memcheck", 0)
    assert not r.clean and "no summary line" in r.error


def test_findings_without_a_summary_keep_the_findings_and_say_the_total_is_unknown(monkeypatch, tmp_path):
    text = "\n".join((FIXTURES / "sanitizer_2025.3.1_memcheck_oob_write_lineinfo.txt").read_text()
                     .splitlines()[:9]) + "\n"
    r = fixture_run(monkeypatch, tmp_path, text, "memcheck", 86)
    assert r.findings and r.error is None and r.counted is None and not r.clean
    console = Console(width=100, record=True)
    console.print(findings_view([r]))
    assert "total is unknown" in console.export_text()


def test_clean_fixture_is_clean(monkeypatch, tmp_path):
    r = fixture_run(monkeypatch, tmp_path, "sanitizer_2025.3.1_memcheck_clean.txt", "memcheck", 0)
    assert r.clean and r.counted == 0


# ---------------------------------------------------------------- what the user reads


def racy_result(tmp_path: Path) -> SanitizeResult:
    from gpuprof.parsers.sanitizer_log import parse_log

    log = (f"========= Error: Race reported between Write access at racy(float *)+0xa0 in {HASH}.cubin.cu:3\n"
           f"=========     and Read access at racy(float *)+0xb0 in {HASH}.cubin.cu:3 [992 hazards]\n"
           "========= \n========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n")
    summary = parse_log(log, None, "racecheck")
    r = sanitize._from_summary("python cupy_race.py", summary, 86, tmp_path / "command_racecheck.log")
    sanitize._locate([r], lambda _: [], SourceFinder([fake_cache(tmp_path)], cwd=tmp_path))
    return r


@pytest.mark.parametrize("width", [80, 100, 160])
def test_findings_show_file_line_and_the_source_text_uncut(tmp_path, width):
    r = racy_result(tmp_path)
    console = Console(width=width, record=True)
    console.print(command_table([r]))
    console.print(findings_view([r]))
    text = console.export_text()
    assert "if (i <= n) x[i] = 1.0f;" in text
    assert f"cupy-cache/{HASH}.cubin.cu:3" in text.replace("\n", "")
    assert "992 hazards" in text and "…" not in text


@pytest.mark.parametrize("width", [80, 100])
def test_families_table_fits_and_counts_runs(width):
    ok = [SanitizeResult(f"matmul/v{i}", t, error_count=0) for i in range(7) for t in tool.TOOLS]
    bad = SanitizeResult("reduce/x", "memcheck", error_count=2,
                         findings=[sanitize.SanitizerFinding("memcheck", "invalid_read", "m")] * 2)
    run = SanitizeRun([*ok, bad], [sanitize.Skipped("vecadd/grid", "racecheck", "no shared memory (ptxas)")])
    console = Console(width=width, record=True)
    console.print(families_table(run, list(tool.TOOLS)))
    text = console.export_text()
    assert "7 clean" in text and "1 found" in text and "1 skipped" in text and "…" not in text
    assert max(len(line) for line in text.splitlines()) <= width


def test_short_kernel_drops_parameters_and_return_type():
    assert short_kernel("oob_write(int *, int)") == "oob_write"
    assert short_kernel("void tiled<32, float>(float *)") == "tiled<32, float>"
    assert short_kernel(None) == "-"
