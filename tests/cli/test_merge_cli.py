"""`gpuprof merge` and `suite --shard` at the command line, on the recorded H100 smoke files."""

from __future__ import annotations

import json
from dataclasses import replace

from gpuprof import results
from gpuprof.cli import app


def _halves(fixtures_dir, tmp_path):
    recorded = results.load(fixtures_dir / "results" / "smoke_a.json")
    paths = []
    for index, family in enumerate(("vecadd", "matmul")):
        path = tmp_path / f"{family}.json"
        results.save(replace(recorded, rows=[r for r in recorded.rows if r.family == family]), path)
        paths.append(path)
    return recorded, paths


def test_merge_joins_files_into_one(runner, fixtures_dir, tmp_path):
    recorded, paths = _halves(fixtures_dir, tmp_path)
    out = tmp_path / "all.json"
    done = runner.invoke(app, ["merge", *map(str, reversed(paths)), "--json", str(out)])
    assert done.exit_code == 0, done.output
    assert "merged 2 files (no shards): 6 rows" in done.stdout
    merged = results.load(out)
    assert sorted(r.id for r in merged.rows) == sorted(r.id for r in recorded.rows)
    assert [m["file"] for m in merged.shard["merged"]] == ["matmul.json", "vecadd.json"]
    dash = runner.invoke(app, ["merge", *map(str, paths), "--json", "-"])
    assert dash.exit_code == 0 and len(json.loads(dash.stdout)["rows"]) == 6


def test_merge_refuses_mixed_files_in_one_line(runner, fixtures_dir, tmp_path):
    _, (a, b) = _halves(fixtures_dir, tmp_path)
    data = json.loads(b.read_text())
    data["environment"]["driver_version"] = "570.86.10"
    b.write_text(json.dumps(data))
    out = tmp_path / "all.json"
    refused = runner.invoke(app, ["merge", str(a), str(b), "--json", str(out)])
    assert refused.exit_code == 2 and not out.exists()
    assert refused.stderr.count("\n") == 1 and "driver" in refused.stderr and "--allow-mixed" in refused.stderr
    allowed = runner.invoke(app, ["merge", str(a), str(b), "--json", str(out), "--allow-mixed"])
    assert allowed.exit_code == 0 and "warning:" in allowed.stderr and out.exists()


def test_merge_usage_errors(runner, fixtures_dir, tmp_path):
    _, (a, b) = _halves(fixtures_dir, tmp_path)
    for argv, words in ((["merge", str(a), str(b)], "--json"),
                        (["merge", str(a), "--json", str(tmp_path / "x.json")], "at least two"),
                        (["merge", str(a), str(a), "--json", str(tmp_path / "x.json")], "twice"),
                        (["merge", str(a), str(b), "--json", str(a)], "also an input")):
        done = runner.invoke(app, argv)
        assert done.exit_code == 2 and words in done.stderr, (argv, done.stderr)


def test_suite_shard_is_checked_before_any_gpu_work(runner, tmp_path):
    for shard, words in (("3/2", "K must be from 1 to N"), ("x", "give K/N"), ("7/7", "only 6 units")):
        done = runner.invoke(app, ["suite", "suites/smoke.toml", "--shard", shard, "--json", str(tmp_path / "s.json")])
        assert done.exit_code == 2 and words in done.stderr, done.stderr
    alone = runner.invoke(app, ["suite", "suites/smoke.toml", "--history", "x.json"])
    assert alone.exit_code == 2 and "--shard" in alone.stderr
