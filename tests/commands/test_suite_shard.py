"""suite --shard K/N and gpuprof merge on recorded H100 results: the split is deterministic and
disjoint, and the merged shards equal the unsharded file's rows."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gpuprof import results
from gpuprof.commands.merge import merge
from gpuprof.commands.suite import load
from gpuprof.commands.suite_plan import units_of
from gpuprof.commands.suite_shard import Shard, parse_shard, plan_shard
from gpuprof.errors import InputError, UsageError

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "suites" / "smoke.toml"
COURSE = ROOT / "suites" / "course.toml"
RECORDED = ROOT / "tests" / "fixtures" / "results" / "smoke_a.json"


def test_parse_shard():
    assert parse_shard("2/4") == Shard(2, 4)
    assert parse_shard(" 1 / 1 ") == Shard(1, 1)
    for bad in ("0/2", "3/2", "1/0", "a/b", "1", "1/2/3"):
        with pytest.raises(UsageError, match="--shard"):
            parse_shard(bad)


@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_shards_are_disjoint_and_cover_the_suite(count):
    suite = load(COURSE)
    every = {u.number for u in units_of(suite)}
    plans = [plan_shard(suite, Shard(k, count)) for k in range(1, count + 1)]
    numbers = [u.number for p in plans for u in p.units]
    assert sorted(numbers) == sorted(every)
    assert len(numbers) == len(set(numbers))
    # the same call gives the same split (no machine, clock or random state in it)
    again = plan_shard(suite, Shard(1, count))
    assert [u.number for u in again.units] == [u.number for u in plans[0].units]
    # balanced: no shard more than the longest unit beyond the mean (list scheduling's bound)
    mean = sum(p.expected_s for p in plans) / count
    assert max(p.expected_s for p in plans) <= mean + max(plans[0].expected_all_s)


def test_shard_suite_runs_only_its_units_in_suite_order():
    suite = load(COURSE)
    plan = plan_shard(suite, Shard(2, 3))
    units = [(c.family, v, tuple((c.sizes or [{}])[0].items())) for c in plan.suite.cases for v in c.variants]
    assert len(units) == len(plan.units)
    assert [u.variant for u in plan.units] == [v for _, v, _ in units]
    assert list(plan.record["order"].values()) == sorted(plan.record["order"].values())
    assert plan.record["index"] == 2 and plan.record["count"] == 3


def test_history_balances_by_recorded_times():
    suite = load(SMOKE)
    history = results.load(RECORDED)
    plan = plan_shard(suite, Shard(1, 2), history)
    assert plan.estimates_from == "history"
    assert len(plan.units) >= 1


def _shards_of(recorded: results.Results, suite_path: Path, count: int) -> list[results.Results]:
    """The recorded file cut the way `suite --shard K/N` would have run it, each shard's speedups
    cleared where its table lacks the baseline (as a real shard's would be)."""
    suite = load(suite_path)
    parts = []
    for k in range(1, count + 1):
        plan = plan_shard(suite, Shard(k, count), recorded)
        rows = [replace(r, derived=replace(r.derived, vs_baseline=None, vs_vendor=None) if r.derived else None)
                for r in recorded.rows if r.id in plan.record["order"]]
        parts.append(replace(recorded, rows=rows, shard=plan.record))
    return parts


@pytest.mark.parametrize("count", [2, 3])
def test_merged_shards_equal_the_unsharded_rows(tmp_path, count):
    recorded = results.load(RECORDED)
    files = []
    for index, part in enumerate(reversed(_shards_of(recorded, SMOKE, count))):  # any order of files
        path = tmp_path / f"part{index}.json"
        results.save(part, path)
        files.append((path, results.load(path)))
    merged = merge(files).results
    assert [r.id for r in merged.rows] == [r.id for r in recorded.rows]
    assert merged.rows == recorded.rows  # samples, checks and the recomputed speedups alike
    assert [m["shard"] for m in merged.shard["merged"]] == [f"{count - i}/{count}" for i in range(count)]
    results.save(merged, tmp_path / "all.json")
    assert results.load(tmp_path / "all.json").rows == recorded.rows


def test_merge_refuses_other_machines_unless_allowed(tmp_path):
    recorded = results.load(RECORDED)
    a, b = _shards_of(recorded, SMOKE, 2)
    for key, value in (("gpu_name", "NVIDIA H200"), ("driver_version", "570.1"), ("gpuprof_version", "0.2.0")):
        other = replace(b, environment={**b.environment, key: value})
        with pytest.raises(InputError, match="--allow-mixed"):
            merge([(Path("a.json"), a), (Path("b.json"), other)])
        joined = merge([(Path("a.json"), a), (Path("b.json"), other)], allow_mixed=True)
        assert len(joined.results.rows) == len(recorded.rows)
        assert any("differ" in note for note in joined.notes)


def test_merge_refuses_overlap_and_split_mismatch():
    recorded = results.load(RECORDED)
    a, _ = _shards_of(recorded, SMOKE, 2)
    with pytest.raises(InputError, match="both"):
        merge([(Path("a.json"), a), (Path("again.json"), a)])
    c, _, _ = _shards_of(recorded, SMOKE, 3)
    with pytest.raises(InputError, match="different splits"):
        merge([(Path("a.json"), a), (Path("c.json"), c)])


def test_merge_notes_a_missing_shard():
    recorded = results.load(RECORDED)
    a, _, c = _shards_of(recorded, SMOKE, 3)
    notes = merge([(Path("a.json"), a), (Path("c.json"), c)]).notes
    assert notes == ["shard 2 of 3 not given: its rows are missing from the merged file"]
