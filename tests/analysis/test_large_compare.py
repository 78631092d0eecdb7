"""What makes an 18k-row compare fast and small (issue 16 item 6) gives the answers the plain,
per-row computation gives: compact samples, the sorted-median shortcut, precomputed per-row
statistics, the vectorised clock median and the JSON report written in pieces. Seeded, CPU only."""

from __future__ import annotations

import copy
import gc
import json
import math
import pickle
from dataclasses import asdict

import numpy as np
import pytest

from gpuprof import results as results_io
from gpuprof.analysis import compare
from gpuprof.analysis.compare_presets import PRESETS
from gpuprof.analysis.order_stats import sorted_median
from gpuprof.analysis.run_shift import median_clock_mhz
from gpuprof.analysis.stats import summarize
from gpuprof.cli.compare import MESSAGE_ROWS, _gate_message
from gpuprof.errors import InputError
from gpuprof.files import atomic_write_text
from gpuprof.render.compare_view import compare_json, compare_json_parts
from gpuprof.results import CheckResult, Results, Row, Samples, Timing


def _row(i: int, samples: list[float], clocks: list[float] | None = None, vendor: bool = False) -> Row:
    timing = Timing("cold", samples, "converged", summarize(samples) if samples else None,
                    sm_clock_mhz=clocks if clocks is not None else [1980.0] * len(samples))
    return Row("vecadd", f"v{i:03d}", {"n": 1 << 20}, vendor, CheckResult("ok", sizes_checked=[{"n": 1}, {"n": 4097}]),
               timing)


def _pair_of_runs(rows: int = 120, seed: int = 3) -> tuple[Results, Results]:
    """BASE and NEW with mixed sample counts (odd and even), ties, slower and faster rows, controls."""
    rng = np.random.default_rng(seed)
    base, new = [], []
    for i in range(rows):
        n_base, n_new = int(rng.integers(6, 80)), int(rng.integers(6, 80))
        factor = (1.0, 1.0, 1.06, 0.95, 1.015)[i % 5]
        scale = 1e-4 * (1 + i % 13)
        b = np.round(scale * (1 + 0.004 * rng.standard_normal(n_base)), 9)  # rounded: some ties
        n = np.round(scale * factor * (1 + 0.004 * rng.standard_normal(n_new)), 9)
        base.append(_row(i, b.tolist(), vendor=i % 17 == 0))
        new.append(_row(i, n.tolist(), vendor=i % 17 == 0))
    env = {"gpu_name": "NVIDIA H100 80GB HBM3"}
    return Results(dict(env), base), Results(dict(env), new)


# ---------------------------------------------------------------- statistics: fast path == scalar path


def test_sorted_median_is_numpys_median_bit_for_bit():
    rng = np.random.default_rng(11)
    for size in [*range(1, 70), 101, 1000, 1001]:
        values = np.sort(rng.lognormal(-9, 0.3, size) * rng.choice([1, 1e3, 1e-3]))
        assert sorted_median(values) == float(np.median(values))
        rounded = np.sort(np.round(values, 8))  # ties
        assert sorted_median(rounded) == float(np.median(rounded))


def test_compare_results_equals_the_per_row_verdict():
    """compare_results hands compare_row the samples and log change it computed once; compare_row
    given only the samples recomputes the log change. Given the same rank-test p-value, every field
    is identical."""
    base, new = _pair_of_runs()
    statuses = set()
    for policy in PRESETS.values():
        report = compare.compare_results(base, new, policy)
        assert report.shift.estimated
        for verdict, b, n in zip(report.verdicts, base.rows, new.rows):
            given = compare.RowSamples(compare._samples(b), compare._samples(n), p_value=verdict.p_value)
            alone = compare.compare_row(b, n, compare.JudgingRule(policy, report.shift), given)
            assert alone == verdict
            statuses.add((verdict.status, verdict.reason))
    assert {compare.Status.SAME, compare.Status.SLOWER, compare.Status.FASTER,
            compare.Status.INCONCLUSIVE} <= {status for status, _ in statuses}
    assert len(statuses) >= 5


def test_median_clock_is_the_median_of_each_rows_median_probed_clock():
    """Issue 26: each row weighs once (a lean load keeps only each row's median clock)."""
    rng = np.random.default_rng(5)
    rows, medians = [], []
    for i in range(50):
        clocks = rng.choice([1980.0, 1755.0, 1410.0, math.nan, -1.0, math.inf, 0.0], int(rng.integers(0, 12))).tolist()
        rows.append(_row(i, [1e-4] * len(clocks), clocks=clocks if i % 2 else Samples(clocks)))
        fine = [c for c in clocks if math.isfinite(c) and c > 0]
        medians += [float(np.median(fine))] if fine else []
    assert median_clock_mhz(Results({}, rows)) == float(np.median(medians))
    assert median_clock_mhz(Results({}, [_row(0, [1e-4], clocks=[math.nan])])) is None
    assert median_clock_mhz(Results({}, [])) is None


# ---------------------------------------------------------------- compact samples in loaded files


def test_loaded_samples_are_compact_and_equal_to_the_measured_lists(tmp_path):
    base, _ = _pair_of_runs(rows=5)
    loaded = results_io.load(results_io.save(base, tmp_path / "r.json"))
    timing = loaded.rows[0].timing
    assert isinstance(timing.samples_s, Samples) and isinstance(timing.sm_clock_mhz, Samples)
    assert timing.samples_s == base.rows[0].timing.samples_s and base.rows[0].timing.samples_s == timing.samples_s
    base_samples = base.rows[0].timing.samples_s
    assert not timing.samples_s != base_samples and not base_samples != timing.samples_s  # noqa: SIM202 (__ne__)
    assert timing.samples_s != [1.0] and [1.0] != timing.samples_s and Samples([1.0]) == (1.0,)
    assert loaded == base
    assert copy.deepcopy(timing.samples_s) == timing.samples_s and type(copy.deepcopy(timing.samples_s)) is Samples
    assert pickle.loads(pickle.dumps(timing)) == timing
    written = json.loads((tmp_path / "r.json").read_text())["rows"][0]["timing"]["samples_s"]
    assert results_io.to_dict(loaded)["rows"][0]["timing"]["samples_s"] == written  # a plain list again
    assert isinstance(results_io.to_dict(loaded)["rows"][0]["timing"]["samples_s"], list)


def test_integer_samples_load_as_floats_and_rows_share_equal_small_values(tmp_path):
    data = results_io.to_dict(_pair_of_runs(rows=3)[0])
    data["rows"][0]["timing"]["samples_s"] = [1, 2, 3]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    loaded = results_io.load(path)
    assert loaded.rows[0].timing.samples_s == [1.0, 2.0, 3.0]
    assert loaded.rows[0].check.sizes_checked == [{"n": 1}, {"n": 4097}]
    assert loaded.rows[1].check.sizes_checked[1] is loaded.rows[0].check.sizes_checked[1]


@pytest.mark.parametrize("bad", [[1e-3, True], [1e-3, "2e-3"], [1e-3, None], [1e-3, [2e-3]]])
def test_a_list_that_is_not_all_numbers_is_still_refused(tmp_path, bad):
    data = results_io.to_dict(_pair_of_runs(rows=2)[0])
    data["rows"][1]["timing"]["sm_clock_mhz"] = bad
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match="malformed results file: .*timing samples"):
        results_io.load(path)


def test_load_leaves_the_garbage_collector_as_it_found_it(tmp_path):
    good = results_io.save(_pair_of_runs(rows=2)[0], tmp_path / "r.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "gpuprof.results", "schema_version": 1, "rows": [{}]}')
    for path in (good, bad, tmp_path / "missing.json"):
        assert gc.isenabled()
        try:
            results_io.load(path)
        except InputError:
            pass
        assert gc.isenabled()
    gc.disable()
    try:
        results_io.load(good)
        assert not gc.isenabled()
    finally:
        gc.enable()


# ---------------------------------------------------------------- the JSON report and the error line


def test_json_report_in_pieces_is_the_same_json_as_before():
    base, new = _pair_of_runs(rows=30)
    report = compare.compare_results(base, new, PRESETS["default"])
    text = compare_json(report)
    data = json.loads(text)
    assert data["verdicts"] == json.loads(json.dumps([asdict(v) for v in report.verdicts]))
    assert "".join(compare_json_parts(report)) == text
    assert text.count("\n  {\"row_id\": ") == len(report.verdicts)  # one verdict per line
    empty = compare.compare_results(Results(base.environment, []), Results(base.environment, []),
                                    PRESETS["default"])
    assert json.loads(compare_json(empty))["verdicts"] == []


def test_atomic_write_accepts_pieces(tmp_path):
    target = atomic_write_text(tmp_path / "r.json", (f"{i}\n" for i in range(3)))
    assert target.read_text() == "0\n1\n2\n"


def test_the_error_line_names_the_first_failing_rows_and_counts_the_rest():
    failures = [f"vecadd/v{i:03d}/1 SLOWER (clear_gap): +10.0 %" for i in range(MESSAGE_ROWS + 7)]
    line = _gate_message(failures, 0)
    assert "\n" not in line and line.startswith(f"the gate fails on {MESSAGE_ROWS + 7} row(s): vecadd/v000/1")
    assert f"vecadd/v{MESSAGE_ROWS - 1:03d}/1" in line and f"vecadd/v{MESSAGE_ROWS:03d}/1" not in line
    assert line.endswith("and 7 more (the table, --json and --markdown list them all)")
    assert _gate_message(failures[:2], 0).count("SLOWER") == 2


# ---------------------------------------------------------------- the results file as written and read


def test_the_results_file_has_one_row_per_line_and_the_same_json(tmp_path):
    base, _ = _pair_of_runs(rows=4)
    base.rows[1].technique = "tiles of 32×32 · “quoted”"  # non-ASCII, escaped as before
    path = results_io.save(base, tmp_path / "r.json")
    text = path.read_text()
    assert text.isascii()
    assert json.loads(text) == json.loads(json.dumps(results_io.to_dict(base), indent=1))
    assert sum(line.startswith('  {"family": ') for line in text.splitlines()) == 4
    assert results_io.load(path) == base
    assert "".join(results_io.json_parts(base)) == text
    empty = results_io.save(Results({"gpu_name": "x"}, []), tmp_path / "empty.json")
    assert json.loads(empty.read_text())["rows"] == [] and results_io.load(empty).rows == []


def test_a_bad_row_is_still_named_by_its_number(tmp_path):
    """load makes each row while parsing; a row that does not check out stays a dict until from_dict
    refuses it with the same message as before."""
    data = results_io.to_dict(_pair_of_runs(rows=3)[0])
    del data["rows"][1]["variant"]
    data["rows"][2]["vendor"] = "no"
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"malformed results file: row 2: 'variant' is missing"):
        results_io.load(path)
    data["rows"][1]["variant"] = "v001"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match="file: row 3: vecadd/v002/1048576: vendor must be true or false"):
        results_io.load(path)


def test_the_compare_command_turns_the_collector_back_on(tmp_path):
    from typer.testing import CliRunner

    import gpuprof.cli.compare  # noqa: F401  (registers the command)
    from gpuprof.cli._app import app

    base, new = _pair_of_runs(rows=3)
    paths = [str(results_io.save(r, tmp_path / f"{name}.json")) for name, r in (("base", base), ("new", new))]
    assert gc.isenabled()
    result = CliRunner().invoke(app, ["compare", *paths, "--json", str(tmp_path / "report.json")])
    assert result.exit_code in (0, 1), result.output
    assert gc.isenabled()
    assert len(json.loads((tmp_path / "report.json").read_text())["verdicts"]) == 3


def test_a_lean_load_gives_the_verdicts_of_a_full_load(tmp_path):
    """results.load(lean=True) keeps sorted samples and each row's median clock only: the same report."""
    base, new = _pair_of_runs(rows=40)
    for results in (base, new):
        for row in results.rows:
            row.timing.sm_clock_mhz = [1980.0, 1755.0, 1980.0][: 1 + len(row.id) % 3]
    results_io.save(base, tmp_path / "b.json")
    results_io.save(new, tmp_path / "n.json")
    full = compare.compare_results(results_io.load(tmp_path / "b.json"), results_io.load(tmp_path / "n.json"),
                                   PRESETS["default"])
    lean = compare.compare_results(results_io.load(tmp_path / "b.json", lean=True),
                                   results_io.load(tmp_path / "n.json", lean=True), PRESETS["default"])
    assert lean.verdicts == full.verdicts and lean.shift == full.shift
    row = results_io.load(tmp_path / "n.json", lean=True).rows[1]
    assert list(row.timing.samples_s) == sorted(new.rows[1].timing.samples_s) and len(row.timing.sm_clock_mhz) == 1


def test_a_file_in_another_layout_loads_the_same(tmp_path):
    base, _ = _pair_of_runs(rows=5)
    results_io.save(base, tmp_path / "lines.json")
    (tmp_path / "one.json").write_text(json.dumps(results_io.to_dict(base)))
    (tmp_path / "indented.json").write_text(json.dumps(results_io.to_dict(base), indent=2))
    expected = results_io.load(tmp_path / "lines.json")
    for name in ("one.json", "indented.json"):
        assert results_io.load(tmp_path / name) == expected
