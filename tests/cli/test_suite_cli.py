"""`gpuprof suite` keeps what it finished: the JSON is rewritten after each case, and Ctrl-C exits 130."""

from __future__ import annotations

from typer.testing import CliRunner

from gpuprof import results
from gpuprof.analysis.ceilings import Ceilings
from gpuprof.cli import app
from gpuprof.commands import suite as suite_runner
from gpuprof.results import CheckResult, Results, Row, Summary, Timing
from gpuprof.variants import catalog


def fake_results(request) -> Results:
    rows = []
    for variant in request.variants if isinstance(request.variants, list) else ["grid"]:
        summary = Summary(n=10, median_s=1e-3, mean_s=1e-3, min_s=1e-3, max_s=1e-3, p25_s=1e-3, p75_s=1e-3,
                          rel_spread=0.0)
        rows.append(Row(family=request.family, variant=variant, size=request.size or {"n": 1}, vendor=False,
                        check=CheckResult(status=results.OK, max_rel_error=0.0, tolerance=1e-6),
                        timing=Timing(mode="cold", samples_s=[1e-3] * 10, stop_reason="converged", summary=summary)))
    return Results(environment={"gpu_name": "test GPU"}, rows=rows)


def fake_run_family(request, progress=None, checkpoint=None, worker=None, stop_after=None):
    """Like runner.run_family: checkpoint after every variant; Ctrl-C after `stop_after` of them."""
    partial = Results(environment={"gpu_name": "test GPU"}, rows=[])
    for row in fake_results(request).rows:
        if stop_after is not None and len(partial.rows) == stop_after:
            raise KeyboardInterrupt
        partial.rows.append(row)
        if checkpoint:
            checkpoint(partial)
    return partial


def test_interrupted_suite_leaves_the_finished_variants_in_a_valid_json(tmp_path, monkeypatch):
    calls = []

    def run_family(request, progress=None, checkpoint=None, worker=None):
        calls.append(request.family)
        # Ctrl-C during the second case, after its first variant
        return fake_run_family(request, progress, checkpoint, worker, stop_after=1 if len(calls) == 2 else None)

    monkeypatch.setattr(suite_runner, "run_family", run_family)
    out = tmp_path / "smoke.json"
    result = CliRunner().invoke(app, ["suite", "suites/smoke.toml", "--json", str(out)])
    assert result.exit_code == 130
    assert "Traceback" not in result.output
    saved = results.load(out)  # valid, and holds the first case and the first variant of the second
    assert [r.id for r in saved.rows] == ["vecadd/grid/67108864", "vecadd/vectorized/67108864", "vecadd/torch/67108864",
                                          "matmul/smem_tiled/2048x2048x2048"]


def test_sweep_rows_get_their_defines_in_the_variant_name(tmp_path, monkeypatch):
    suite = tmp_path / "sweep.toml"
    suite.write_text('schema = 1\nname = "sweep"\n[[sweep]]\nfamily = "matmul"\nvariant = "warptile"\n'
                     'params = { BM = [64, 128] }\nsize = { m = 256, n = 256, k = 256 }\n')
    monkeypatch.setattr(suite_runner, "run_family", fake_run_family)
    loaded = suite_runner.load(suite)
    outcome = suite_runner.run_suite(loaded)
    assert [r.variant for r in outcome.rows] == ["warptile[BM=64]", "warptile[BM=128]"]
    assert len({r.id for r in outcome.rows}) == 2  # distinct ids, so compare can tell them apart


def test_suite_writes_its_compare_preset_gate_target_and_control_rows(tmp_path, monkeypatch):
    suite = tmp_path / "gate.toml"
    suite.write_text('schema = 1\nname = "gate"\ncompare = { preset = "strict" }\n'
                     '[[case]]\nfamily = "vecadd"\nvariants = ["grid"]\n'
                     '[[case]]\nfamily = "matmul"\nvariants = ["smem_tiled"]\ncontrol = true\n')
    seen = []

    def run_family(request, progress=None, checkpoint=None, worker=None):
        seen.append(request.policy)
        return fake_run_family(request, progress, checkpoint, worker)

    monkeypatch.setattr(suite_runner, "run_family", run_family)
    out = tmp_path / "gate.json"
    outcome = suite_runner.run_suite(suite_runner.load(suite), out)
    saved = results.load(out)
    assert saved.compare == outcome.compare == {"preset": "strict"}
    assert [r.control for r in saved.rows] == [False, True]
    assert {(p.target_resolution, p.resolution_alpha) for p in seen} == {(0.004, 0.05)}
    assert saved.timing_policy["target_resolution"] == 0.004


def test_gpus_naming_a_missing_gpu_is_one_usage_line(monkeypatch):
    from gpuprof.commands import suite_gpus

    monkeypatch.setattr(suite_gpus, "visible_gpu_count", lambda: 2)
    result = CliRunner().invoke(app, ["suite", "suites/smoke.toml", "--gpus", "0,5"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "GPU 5 does not exist (this machine has 2: 0..1)" in result.output


def test_history_without_gpus_is_one_usage_line(tmp_path):
    history = tmp_path / "old.json"
    history.write_text("{}")
    result = CliRunner().invoke(app, ["suite", "suites/smoke.toml", "--history", str(history)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "--history orders the work of a --gpus or --shard run" in result.output


def test_a_history_file_that_is_not_results_is_one_input_line(tmp_path, monkeypatch):
    from gpuprof.commands import suite_gpus

    monkeypatch.setattr(suite_gpus, "visible_gpu_count", lambda: 2)
    history = tmp_path / "old.json"
    history.write_text("{}")
    result = CliRunner().invoke(app, ["suite", "suites/smoke.toml", "--gpus", "all", "--history", str(history)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "not a gpuprof results file" in result.output


def test_a_one_gpu_suite_records_each_units_wall_time_for_a_later_history(tmp_path, monkeypatch):
    """Unit walls (compile and check included) let `suite --gpus --history one.json` put the slow
    units first: estimated from samples alone, torch.compile's 20 s units looked like 2 s ones."""
    import types

    from gpuprof.commands.suite_plan import history_unit_s

    # case 1 starts (and its step clock), 2 variants (each also restarts the step clock); case 2: 1 variant
    clock = iter([0.0, 0.0, 3.0, 3.0, 10.0, 10.0, 100.0, 100.0, 125.0, 125.0])
    monkeypatch.setattr(suite_runner, "time", types.SimpleNamespace(monotonic=lambda: next(clock)))
    monkeypatch.setattr(suite_runner, "run_family", fake_run_family)
    suite = tmp_path / "two.toml"
    suite.write_text('schema = 1\nname = "two"\n[[case]]\nfamily = "vecadd"\nvariants = ["grid", "vectorized"]\n'
                     '[[case]]\nfamily = "matmul"\nvariants = ["smem_tiled"]\n')
    out = tmp_path / "one.json"
    suite_runner.run_suite(suite_runner.load(suite), out)
    rows = results.load(out).rows
    assert [r.gpu["unit_wall_s"] for r in rows] == [3.0, 7.0, 25.0]
    assert [history_unit_s(r) for r in rows] == [3.0, 7.0, 25.0]
    assert all(r.gpu["index"] is None and r.gpu["name"] == "test GPU" for r in rows)


def test_the_step_clock_splits_a_units_time_by_the_cores_progress_events(monkeypatch):
    """What `steps_s` in a row's gpu record holds: seconds before the first event, then per step."""
    import types

    from gpuprof.progress import Progress

    clock_times = iter([0.0, 1.5, 2.0, 6.0, 16.0, 17.0, 17.0, 20.0, 21.0])
    monkeypatch.setattr(suite_runner, "time", types.SimpleNamespace(monotonic=lambda: next(clock_times)))
    clock = suite_runner.StepClock()  # t = 0
    for step in ("compile", "check", "time", "verify", "done"):  # at 1.5, 2, 6, 16, 17
        clock(Progress("grid", step, 0, 1))
    assert clock.take() == {"start": 1.5, "compile": 0.5, "check": 4.0, "time": 10.0, "verify": 1.0}  # restarts at 17
    clock(Progress("vectorized", "compile", 1, 2))  # at 20: the next unit's start-up
    assert clock.take() == {"start": 3.0}


# ---------------------------------------------------------------- figures stored by the core, tables rendered from them


LIMITS = Ceilings(bandwidth_bytes_s=3.0e12, flops={"fp32": 50e12}, source="test sheet")


def judged_run_family(request, progress=None, checkpoint=None, worker=None):
    """fake_run_family whose rows are judged as the run core judges them (rate and ceiling stored)."""
    from gpuprof import families
    from gpuprof.analysis.derive import judge

    rate_kind = families.host(catalog.load_family(request.family)).RATE

    def judged(partial):
        for row in partial.rows:
            row.flop, row.bytes = 2e9, 1.2e9
            if row.derived is None:
                judge(row, LIMITS, rate_kind)
        checkpoint(partial)

    return fake_run_family(request, progress, judged, worker)


def test_a_sweep_table_spans_its_cases_and_its_speedups_are_in_the_json(tmp_path, monkeypatch):
    suite = tmp_path / "sweep.toml"
    suite.write_text('schema = 1\nname = "sweep"\n[[case]]\nfamily = "matmul"\nvariants = ["naive", "cublas"]\n'
                     'sizes = [{ m = 256, n = 256, k = 256 }]\n'
                     '[[sweep]]\nfamily = "matmul"\nvariant = "warptile"\nparams = { BM = [64, 128] }\n'
                     'size = { m = 256, n = 256, k = 256 }\n')
    monkeypatch.setattr(suite_runner, "run_family", judged_run_family)
    out = tmp_path / "sweep.json"
    suite_runner.run_suite(suite_runner.load(suite), out)
    saved = results.load(out)
    # Every row ran in 1 ms at the same work: 1x vs the baseline and the vendor, swept rows included.
    assert {r.variant: (r.derived.vs_baseline, r.derived.vs_vendor) for r in saved.rows} == {
        "naive": (1.0, 1.0), "cublas": (1.0, 1.0), "warptile[BM=64]": (1.0, 1.0), "warptile[BM=128]": (1.0, 1.0)}
    tables = suite_runner.suite_tables(saved)
    assert [(t.family.name, t.baseline, t.vendor, len(t.rows)) for t in tables] == [("matmul", "naive", "cublas", 4)]


def test_gpuprof_suite_prints_the_tables_the_core_returned(tmp_path, monkeypatch):
    monkeypatch.setattr(suite_runner, "run_family", judged_run_family)
    monkeypatch.setattr(suite_runner, "gpu_ceilings", lambda: LIMITS)
    out = tmp_path / "smoke.json"
    result = CliRunner().invoke(app, ["suite", "suites/smoke.toml", "--json", str(out), "--wide"])
    assert result.exit_code == 0, result.output
    titles = [line for line in result.stdout.splitlines() if " — size " in line]
    assert [t.split(":")[0] for t in titles] == ["vecadd", "matmul"]
    grid = next(line for line in result.stdout.splitlines() if line.startswith("grid "))
    assert "1200" in grid and "40.0 %" in grid and "1x" in grid  # 1.2 GB in 1 ms of a 3 TB/s ceiling
    assert "ceilings: test sheet" in result.stdout


def test_a_suite_spread_over_gpus_stores_speedups_across_the_gpus_rows(tmp_path):
    from gpuprof.commands.suite_gpus import UnitDone, _Merged
    from gpuprof.results import Derived

    suite = tmp_path / "two.toml"
    suite.write_text('schema = 1\nname = "two"\n[[case]]\nfamily = "vecadd"\nvariants = ["grid", "vectorized"]\n')
    merged = _Merged(suite_runner.load(suite), None, 0.0, "estimates")
    for number, (variant, rate) in enumerate([("grid", 2e12), ("vectorized", 3e12)]):
        (row,) = fake_results(suite_runner.RunRequest(family="vecadd", variants=[variant])).rows
        row.derived = Derived(rate_kind="bytes", rate=rate)
        merged.add(UnitDone(number, number, {"gpu_name": "test GPU"}, [row]), 1.0)
    assert [r.derived.vs_baseline for r in merged.outcome.rows] == [1.0, 1.5]  # vectorized ran on the other GPU


# ---------------------------------------------------------------- progress: one line per finished unit


def reporting_run_family(request, progress=None, checkpoint=None, worker=None):
    """judged_run_family that reports the core's steps, a DONE with each row's outcome (as run_family does)."""
    from gpuprof.commands.run import unit_outcome
    from gpuprof.progress import DONE, Progress

    variants = request.variants if isinstance(request.variants, list) else ["grid"]
    seen = []

    def judged(partial):
        row = partial.rows[-1]
        index = len(partial.rows) - 1
        for step in ("compile", "check", "time", "verify"):
            progress(Progress(row.variant, step, index, len(variants)))
        seen.append(row)
        progress(Progress(row.variant, DONE, index, len(variants), outcome=unit_outcome(row)))
        if checkpoint:
            checkpoint(partial)

    return judged_run_family(request, None, judged, worker)


def _fake_monotonic(monkeypatch, step_s):
    import itertools
    import types

    from gpuprof.render import suite_progress

    ticks = itertools.count(0.0, step_s)
    monkeypatch.setattr(suite_progress, "time", types.SimpleNamespace(monotonic=lambda: next(ticks)))


def test_a_suite_in_a_log_prints_one_plain_line_per_finished_unit(tmp_path, monkeypatch):
    monkeypatch.setattr(suite_runner, "run_family", reporting_run_family)
    monkeypatch.setattr(suite_runner, "gpu_ceilings", lambda: LIMITS)
    _fake_monotonic(monkeypatch, 10.0)  # each unit's line 10 s after the last
    out = tmp_path / "smoke.json"
    result = CliRunner().invoke(app, ["suite", "suites/smoke.toml", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        "[1/6  0:10 ETA  0:50] vecadd grid 67108864  OK  1 ms  1200 GB/s",
        "[2/6  0:20 ETA  0:40] vecadd vectorized 67108864  OK  1 ms  1200 GB/s",
        "[3/6  0:30 ETA  0:30] vecadd torch 67108864  OK  1 ms  1200 GB/s",
        "[4/6  0:40 ETA  0:20] matmul smem_tiled 2048x2048x2048  OK  1 ms  2.00 TFLOP/s",
        "[5/6  0:50 ETA  0:10] matmul warptile 2048x2048x2048  OK  1 ms  2.00 TFLOP/s",
        "[6/6  1:00 ETA  0:00] matmul cublas 2048x2048x2048  OK  1 ms  2.00 TFLOP/s",
    ]
    assert "[1/6" not in result.stdout and len(results.load(out).rows) == 6  # the JSON as before


def test_quiet_prints_no_progress_and_a_shard_counts_its_own_units(tmp_path, monkeypatch):
    monkeypatch.setattr(suite_runner, "run_family", reporting_run_family)
    monkeypatch.setattr(suite_runner, "gpu_ceilings", lambda: LIMITS)
    _fake_monotonic(monkeypatch, 1.0)
    quiet = CliRunner().invoke(app, ["suite", "suites/smoke.toml", "--json", str(tmp_path / "q.json"), "-q"])
    assert quiet.exit_code == 0 and quiet.stderr == ""
    shard = CliRunner().invoke(app, ["suite", "suites/smoke.toml", "--shard", "1/2", "--json",
                                     str(tmp_path / "s.json")])
    assert shard.exit_code == 0, shard.output
    lines = shard.stderr.splitlines()
    assert lines[0].startswith("shard 1/2: 3 of 6 units")
    assert [line.split("]")[0].split()[0] for line in lines[1:]] == ["[1/3", "[2/3", "[3/3"]


def test_a_sweeps_progress_line_names_the_row_it_makes(tmp_path, monkeypatch):
    suite = tmp_path / "sweep.toml"
    suite.write_text('schema = 1\nname = "sweep"\n[[sweep]]\nfamily = "matmul"\nvariant = "warptile"\n'
                     'params = { BM = [64, 128] }\nsize = { m = 256, n = 256, k = 256 }\n')
    monkeypatch.setattr(suite_runner, "run_family", reporting_run_family)
    seen = []
    suite_runner.run_suite(suite_runner.load(suite), progress=seen.append)
    finished = [(s.finished, s.total, s.outcome.row_id) for s in seen if s.outcome is not None]
    assert finished == [(1, 2, "matmul/warptile[BM=64]/256x256x256"), (2, 2, "matmul/warptile[BM=128]/256x256x256")]


def test_on_a_terminal_the_lines_print_above_a_live_bar_folded_to_its_width(monkeypatch):
    import io

    from rich.console import Console

    from gpuprof.cli import _suite_progress
    from gpuprof.progress import DONE, Progress, UnitOutcome

    screen = io.StringIO()
    monkeypatch.setattr(_suite_progress, "err_console",
                        Console(file=screen, force_terminal=True, width=60, color_system=None))
    _fake_monotonic(monkeypatch, 30.0)
    outcome = UnitOutcome("matmul", "warptile", "4096x4096x4096", "ok", 2.931e-3, 46.92e12, "flop")
    with _suite_progress.suite_progress() as on_step:
        on_step(Progress("warptile", "time", 0, 2, within="case 1/1 matmul"))
        on_step(Progress("warptile", DONE, 0, 2, within="case 1/1 matmul", outcome=outcome))
    assert ("[1/2  0:30 ETA  0:30] matmul warptile 4096x4096x4096  OK\n"
            "                      2.931 ms  46.92 TFLOP/s\n") in screen.getvalue()  # 60 columns, nothing cut


def test_a_shard_stopped_before_its_end_still_says_which_part_it_is(tmp_path, monkeypatch):
    """Seen on the H100: a shard killed by a timeout after its last unit kept every row but not its
    record, so `gpuprof merge` could not place it. Every checkpoint now carries the record."""
    calls = []

    def run_family(request, progress=None, checkpoint=None, worker=None):
        calls.append(request.family)
        return fake_run_family(request, progress, checkpoint, worker, stop_after=1 if len(calls) == 2 else None)

    monkeypatch.setattr(suite_runner, "run_family", run_family)
    out = tmp_path / "part1.json"
    result = CliRunner().invoke(app, ["suite", "suites/smoke.toml", "--shard", "1/1", "--json", str(out)])
    assert result.exit_code == 130  # stopped (Ctrl-C) in its second case
    saved = results.load(out)
    assert saved.shard["index"] == 1 and saved.shard["count"] == 1 and saved.rows
    assert set(saved.shard["order"]) >= {row.id for row in saved.rows}


def test_the_suite_file_describes_every_family_its_cases_ran(tmp_path, monkeypatch):
    """Each case's run describes its family (as run_tables does); the suite's file holds them all."""
    from gpuprof.families import registry
    from gpuprof.families.described import family_info

    def run_family(request, progress=None, checkpoint=None, worker=None):
        family = registry.resolve(request.family)
        described = {family.name: family_info(family, registry.host_for(family))}

        def with_block(partial):
            partial.families = described
            checkpoint(partial)

        return fake_run_family(request, progress, with_block, worker)

    monkeypatch.setattr(suite_runner, "run_family", run_family)
    out = tmp_path / "smoke.json"
    suite_runner.run_suite(suite_runner.load(suite_runner.Path("suites/smoke.toml")), out)
    saved = results.load(out)
    assert list(saved.families) == ["vecadd", "matmul"]
    assert (saved.families["vecadd"].rate_kind, saved.families["matmul"].rate_kind) == ("bytes", "flop")
    assert saved.families["matmul"].formula == registry.host_for(registry.resolve("matmul")).FORMULA
