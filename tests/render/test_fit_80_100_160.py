"""Every command's tables at 80, 100 and 160 columns, from recorded data (issue 35, "terminal fit"):
no line wider than the terminal; no variant or kernel name, `file:line` or define value cut (no "…"
at the end of a word, each shown whole on one line); the columns left out named.

build (a fake ptxas report over the catalogue's variants: their names, defines, block sizes and
dynamic shared memory), list (the catalogue), sanitize --import (the recorded logs), doctor (checks
as this machine gave them, with its longest path), ncu --import and --source (recorded reports),
ncu --ladder (the recorded reports behind a fake ncu), show and compare (recorded results files).
The free-text columns (list's technique, doctor's result) wrap at spaces; ncu's stems may mark an
omitted middle ("head…tail", render/kernel_names.py), never a cut end."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from gpuprof.cli import app
from gpuprof.commands.build import BuildResult
from gpuprof.commands.doctor import Check
from gpuprof.parsers.nvcc_resources import ResourceUsage
from gpuprof.render.build_view import build_json, build_table
from gpuprof.render.doctor_view import doctor_view
from gpuprof.render.fit import print_table
from gpuprof.variants import catalog
from tests.cli.test_ncu_success import RecordedNcu, fake_ncu  # noqa: F401 (a fixture)
from tests.ncu_full_reports import requires_ncu_report

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
RESULTS, TOOLS = FIXTURES / "results", FIXTURES / "tools"
WIDTHS = (80, 100, 160)
CUT = re.compile(r"\w…(\s|$)")  # a word that ends in "…": cut


def fits(text: str, width: int, whole: Sequence[str] = (), source_text: bool = False) -> list[str]:
    """The lines of `text`, each checked: within `width` (but ncu's `reports:` line, left whole for
    copying: the terminal folds it), no cut word, every `whole` string on one line. source_text: the
    lines end in a kernel's source text, which `ncu --source` clips at the terminal (free text)."""
    lines = text.splitlines()
    too_wide = [line for line in lines if len(line) > width and not line.startswith("reports: ")]
    assert not too_wide, f"{len(too_wide[0])} > {width}: {too_wide[0]!r}"
    cut = [line for line in lines if CUT.search(line) and not source_text]
    assert not cut, cut[0]
    for token in whole:
        assert any(token in line for line in lines), f"{token!r} is not whole on one line:\n{text}"
    return lines


def cli(width: int, *argv: str):
    return CliRunner(env={"COLUMNS": str(width)}).invoke(app, list(argv))


def rendered(renderable, width: int, table: bool = True) -> str:
    console = Console(width=width, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    if table:
        print_table(console, renderable, wide=False)
    else:
        console.print(renderable)
    return console.export_text()


# ---------------------------------------------------------------- build


def built() -> list[BuildResult]:
    """The catalogue's CUDA variants with a made-up ptxas report (registers grow with the defines)."""
    out = []
    for fam in catalog.load_all():
        for v in fam.variants:
            if not v.is_cuda:
                continue
            x, y, z = v.block_dims()
            usage = ResourceUsage(v.kernel or v.name, "sm_90", 32 + 8 * len(v.defines), 1024 * (len(v.defines) % 3),
                                  0, 0, 0, 1)
            out.append(BuildResult(fam.name, v.name, v.defines, usage, None, x * y * z, v.dynamic_smem_bytes()))
    return out


@pytest.mark.parametrize("width", WIDTHS)
def test_build_names_and_define_values_whole(width):
    results = built()
    defines = [f"{k}={v}" for r in results for k, v in r.defines.items()]
    text = rendered(build_table(results, "sm_90", width), width)
    lines = fits(text, width, whole=defines)
    for r in results:  # every row starts with its family and its whole variant name
        assert any(line.split()[:2] == [r.family, r.variant] for line in lines), r.variant
    assert "blocktil…" not in text and "NUM_THR…" not in text
    if width < 160:
        assert "not shown at this width:" in text and "defines —" in text  # moved under the table


def test_build_adds_the_dynamic_shared_memory_and_the_occupancy():
    fam = catalog.load_family("matmul")
    v = fam.variant("multistage")
    assert v.dynamic_smem_bytes() > 0  # the rung sizes its shared memory at launch
    x, y, z = v.block_dims()
    result = BuildResult("matmul", v.name, v.defines, ResourceUsage(v.kernel, "sm_90", 239, 0, 0, 0, 0, 1), None,
                         x * y * z, v.dynamic_smem_bytes())
    entry = build_json(result, "sm_90")
    assert entry["smem_bytes"] == v.dynamic_smem_bytes() and entry["dynamic_smem_bytes"] == v.dynamic_smem_bytes()
    # 239 registers: 7680 per warp, 2 warps per sub-partition, 8 per SM: one block of 8 warps
    assert entry["occupancy"] == {"blocks_per_sm": 1, "warps_per_sm": 8, "theoretical_pct": 12.5,
                                  "limiters": ["registers"], "note": None}
    row = next(line for line in rendered(build_table([result], "sm_90", 160), 160).splitlines()
               if line.startswith("matmul"))
    assert row.split()[2:7] == ["239", str(v.dynamic_smem_bytes()), "1", "12.5", "%"]
    other = rendered(build_table([result], "sm_80", 100), 100)
    assert "sm_90 only, not sm_80" in " ".join(other.split())
    assert build_json(result, "sm_80")["occupancy"] is None


# ---------------------------------------------------------------- list


@pytest.mark.parametrize("width", WIDTHS)
def test_list_every_variant_whole(width):
    result = cli(width, "list")
    assert result.exit_code == 0, result.output
    lines = fits(result.stdout, width)
    for fam in catalog.load_all():
        for v in fam.variants:
            name = v.name + (" (vendor)" if v.vendor else "")
            assert any(line.startswith(name + " ") for line in lines), name


# ---------------------------------------------------------------- sanitize --import

LOGS = sorted(p.name for p in TOOLS.glob("sanitizer_*.txt")
              if not p.name.endswith((".source.txt", "_help.txt", "_messages_exit_codes.txt")))


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("log", LOGS)
def test_sanitize_import_file_lines_whole(log, width):
    result = cli(width, "sanitize", "--import", str(TOOLS / log))
    assert "Traceback" not in result.output
    text = result.stdout
    fits(text, width)
    found = cli(160, "sanitize", "--import", str(TOOLS / log), "--json", "-")
    places = {f"{os.path.basename(site['file'])}:{site['line']}"
              for run in json.loads(found.stdout)["runs"] for finding in run["findings"]
              for site in [finding, *finding.get("sites", [])] if site.get("file")}
    for place in places:  # its path may be shortened where wider than the terminal, never the name:line
        assert any(place in line for line in text.splitlines()), f"{place} broken:\n{text}"


def test_a_path_wider_than_the_terminal_is_normalised_not_broken():
    text = cli(80, "sanitize", "--import", str(TOOLS / "sanitizer_public_issue_excerpts.txt")).stdout
    assert "/home/angeil/mario/gunrock/gunrock/util/scan/warp_scan.cuh:146" in text  # sssp/../../ resolved


# ---------------------------------------------------------------- doctor

CHECKS = [  # as `gpuprof doctor --json -` gave them on a machine without a GPU, ncu or nsys
    Check("CUDA GPU", False, "no NVIDIA driver found on this machine (libcuda.so.1 cannot be loaded and there is no "
          "/proc/driver/nvidia); this command needs an NVIDIA GPU with its driver (list, build, compare and "
          "--import work without one)", "run, ncu, nsys, sanitize", required=True),
    Check("nvcc", True, "13.0 at /usr/local/bin/nvcc", "run --add, build", required=True),
    Check("NVRTC", True, "13.5 at /home/student/.venv/lib/python3.11/site-packages/nvidia/cu13/lib/libnvrtc.so.13",
          "run, build (CUDA variants are compiled by NVRTC through CuPy, as `run` compiles them)", required=True),
    Check("nsys", False, "nsys (Nsight Systems) was not found on PATH, in $CUDA_HOME or next to ncu "
          "(<ncu dir>/host/target-linux-x64/nsys); install Nsight Systems or pass --nsys PATH", "gpuprof nsys"),
    Check("performance counters", False, "cannot read /proc/driver/nvidia/params (no NVIDIA driver here?)",
          "gpuprof ncu"),
]


@pytest.mark.parametrize("width", WIDTHS)
def test_doctor_paths_whole(width):
    text = rendered(doctor_view(CHECKS, width), width, table=False)
    nvrtc = CHECKS[2].detail.split(" at ", 1)[1]
    fits(text, width, whole=["/usr/local/bin/nvcc", nvrtc, "dir>/host/target-linux-x64/nsys);", "performance counters"])
    if width == 160:
        assert "(path below)" not in text


# ---------------------------------------------------------------- ncu, ncu --source, --ladder


@requires_ncu_report
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("report", [TOOLS / "ncu-2025.3.1__launch_vecadd_grid.ncu-rep",
                                    FIXTURES / "cupy-h100" / "vecadd_cupy.ncu-rep"])
def test_ncu_import_tables(report, width):
    result = cli(width, "ncu", "--import", str(report))
    assert result.exit_code == 0, result.output
    fits(result.output, width)


@requires_ncu_report
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("report", ["plain", "warptile"])
def test_ncu_source_file_lines_whole(where_reports, report, width):
    result = cli(width, "ncu", "--import", str(where_reports[report]), "--source")
    assert result.exit_code == 0, result.output
    lines = fits(result.output, width, source_text=True)
    hot = [line.split()[0] for line in lines if re.match(r"\S+\.cuh?:\d+\s", line)]
    assert hot, result.output  # the hottest lines lead their rows with a whole file:line
    assert all(re.fullmatch(r"[\w./-]+\.cuh?:\d+", place) for place in hot), hot


@requires_ncu_report
@pytest.mark.parametrize("width", WIDTHS)
def test_ncu_ladder(fake_ncu, tmp_path, width):  # noqa: F811 (the fixture imported above)
    fake_ncu(RecordedNcu())
    result = cli(width, "ncu", "vecadd", "--ladder", "-v", "grid,torch", "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    ladder = result.output[result.output.index("vecadd ladder"):result.output.index("reports:")]
    lines = fits(ladder, width)
    for name in ("grid", "torch"):
        assert any(line.split()[:1] == [name] for line in lines), name


# ---------------------------------------------------------------- show, compare


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["h100_matmul_all.json", "h100_ci_with.json", "h100_user_family.json"])
def test_show_variant_names_whole(name, width):
    result = cli(width, "show", str(RESULTS / name))
    assert result.exit_code in (0, 1), result.output
    lines = fits(result.stdout, width)
    rows = json.loads((RESULTS / name).read_text())["rows"]
    for row in rows:
        assert any(line.startswith(row["variant"] + " ") for line in lines), row["variant"]


@pytest.mark.parametrize("width", WIDTHS)
def test_compare_row_ids_whole(width):
    result = cli(width, "compare", str(RESULTS / "h100_ci_a.json"), str(RESULTS / "h100_ci_b.json"))
    assert result.exit_code == 0, result.output
    lines = fits(result.stdout, width)
    for row in json.loads((RESULTS / "h100_ci_a.json").read_text())["rows"]:
        assert any(line.startswith(f"{row['family']}/{row['variant']}/") for line in lines), row["variant"]
