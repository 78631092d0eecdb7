"""`gpuprof show RESULTS.json` on the recorded H100 files, without a GPU: the run table again."""

from __future__ import annotations

import json

import pytest

from gpuprof import results
from gpuprof.analysis import ceilings
from gpuprof.cli import app
from gpuprof.commands import show as show_core


def invoke(runner, *args):
    return runner.invoke(app, ["show", *map(str, args)])


def test_show_prints_every_row_with_the_figures_run_printed(runner, fixtures_dir):
    path = fixtures_dir / "results" / "smoke_a.json"
    result = invoke(runner, path)
    assert result.exit_code == 0, result.output
    loaded = results.load(path)
    for row in loaded.rows:
        line = next(line for line in result.stdout.splitlines() if line.startswith(f"{row.variant} "))
        work = row.bytes if row.family == "vecadd" else row.flop
        rate = work / row.timing.summary.median_s
        shown = f"{rate / 1e9:.0f}" if row.family == "vecadd" else f"{rate / 1e12:.2f}"
        assert shown in line and f"{row.timing.summary.n} converged" in line, line
    assert "vs torch" in result.stdout and "vs cublas" in result.stdout  # the speedup columns
    # ceilings come from the file's own GPU (its fingerprint), not from this machine
    assert "datasheet H100 SXM5" in result.stdout


def test_show_uses_the_ceilings_of_the_files_gpu(runner, fixtures_dir, monkeypatch):
    seen = []
    real = ceilings.from_environment

    def from_environment(env):
        seen.append(env["gpu_name"])
        return real(env)

    monkeypatch.setattr(ceilings, "from_environment", from_environment)
    result = invoke(runner, fixtures_dir / "results" / "smoke_a.json")
    assert result.exit_code == 0, result.output
    assert seen and set(seen) == {"NVIDIA H100 80GB HBM3"}
    grid = next(line for line in result.stdout.splitlines() if line.startswith("grid "))
    assert "82.7 %" in grid  # 2770 GB/s of the H100 SXM datasheet's 3350


@pytest.mark.parametrize("status", [results.WRONG, results.IMPOSSIBLE])
def test_a_failed_row_is_shown_as_such_without_a_rate_and_exits_1(runner, fixtures_dir, tmp_path, status):
    data = json.loads((fixtures_dir / "results" / "smoke_a.json").read_text())
    data["rows"][1]["check"]["status"] = status
    data["rows"][1]["check"]["reasons"] = ["its work ran on another stream than the one timed"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    result = invoke(runner, path)
    assert result.exit_code == 1
    line = next(line for line in result.stdout.splitlines() if line.startswith("vectorized "))
    assert status.upper() in line and "2931" not in line and "1.06x" not in line
    assert "vectorized: its work ran on another stream" in result.stdout
    assert f"vecadd/vectorized/67108864 {status.upper()}" in result.stderr


def test_show_of_pytest_rows_of_no_shipped_family(runner, tmp_path, fixtures_dir):
    env = results.load(fixtures_dir / "results" / "smoke_a.json").environment
    timing = results.load(fixtures_dir / "results" / "smoke_a.json").rows[0].timing
    rows = [results.Row(family="pytest", variant="my_kernel", size={}, vendor=False,
                        check=results.CheckResult(status=results.OK), timing=timing, bytes=12.0 * 2**26)]
    path = results.save(results.Results(environment=env, rows=rows, command="pytest"), tmp_path / "p.json")
    result = invoke(runner, path)
    assert result.exit_code == 0, result.output
    assert "my_kernel" in result.stdout and "2770" in result.stdout


def test_show_of_a_file_that_is_not_results_is_one_line_exit_2(runner, tmp_path):
    path = tmp_path / "x.json"
    path.write_text("{}")
    result = invoke(runner, path)
    assert result.exit_code == 2
    assert "not a gpuprof results file" in result.stderr and "Traceback" not in result.output


def test_groups_split_by_family_size_and_mode(fixtures_dir):
    shown = show_core.show(fixtures_dir / "results" / "smoke_a.json")
    assert [(t.family.name, t.mode, len(t.rows)) for t in shown.tables] == [
        ("vecadd", "cold", 3), ("matmul", "cold", 3)]
    assert shown.tables[0].baseline == "grid" and shown.tables[1].baseline is None


def test_a_file_written_before_speedups_were_kept_shows_the_table_it_always_did(runner, fixtures_dir):
    path = fixtures_dir / "results" / "h100_matmul_all.json"
    raw = json.loads(path.read_text())["rows"]
    assert all(set(r["derived"]).isdisjoint({"vs_baseline", "vs_vendor"}) for r in raw)  # the old "derived"
    result = runner.invoke(app, ["show", str(path), "--wide"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("variant "))
    # As `gpuprof show` printed this file before the figures were stored on the rows.
    cells = [line.split() for line in lines[head + 2:head + 9]]  # each row's cells, the spacing aside
    assert lines[head].split() == ["variant", "size", "check", "median", "spread", "samples", "TFLOP/s", "%",
                                   "ceiling", "vs", "naive", "vs", "cublas"]
    assert [[c[0], *c[-5:]] for c in cells] == [
        ["naive", "0.50", "0.7", "%", "1x", "0.00965x"],
        ["smem_tiled", "8.60", "12.9", "%", "17.2x", "0.166x"],
        ["multistage", "45.89", "68.6", "%", "92x", "0.888x"],
        ["swizzled", "46.31", "69.2", "%", "92.9x", "0.896x"],
        ["warptile", "46.81", "70.0", "%", "93.9x", "0.906x"],
        ["cublas", "51.69", "77.3", "%", "104x", "1x"],
        ["cublas_tf32", "398.48", "80.5", "%", "799x", "7.71x"],
    ]
    assert "% ceiling: of the TF32 tensor, dense 494.70 TFLOP/s (cublas_tf32)." in result.stdout


def test_show_stores_the_figures_it_derived_on_the_rows(fixtures_dir):
    shown = show_core.show(fixtures_dir / "results" / "h100_matmul_all.json")
    (table,) = shown.tables
    figures = {r.variant: r.derived for r in table.rows}
    assert figures["naive"].vs_baseline == 1.0 and figures["cublas"].vs_vendor == 1.0
    assert figures["smem_tiled"].vs_baseline == pytest.approx(figures["smem_tiled"].rate / figures["naive"].rate)
    assert figures["cublas_tf32"].ceiling_name == "TF32 tensor, dense"
