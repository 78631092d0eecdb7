"""On a GPU with compute-sanitizer: a family's child recorded as slow is split on the next run
(library variants alone), and the run finds exactly what the unsplit run finds: every variant
checked by every tool, clean built-ins clean, a planted bug found with its line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuprof.cli import app
from gpuprof.commands import sanitize_times
from gpuprof.commands.sanitize import sanitize_size, sanitize_targets
from gpuprof.commands.sanitize_times import ChildTimes, key_of
from gpuprof.tools.target import LaunchTarget
from gpuprof.variants import catalog

pytestmark = pytest.mark.gpu
KERNELS = Path(__file__).resolve().parent.parent / "kernels"


@pytest.fixture(autouse=True)
def needs_sanitizer():
    if shutil.which("compute-sanitizer") is None:
        pytest.skip("compute-sanitizer is not on PATH")


def vecadd_targets() -> tuple[list[LaunchTarget], set[str]]:
    fam = catalog.load_family("vecadd")
    size = sanitize_size(list(fam.check_sizes))
    targets = [LaunchTarget("vecadd", v.name, size, plain_allocations=True) for v in fam.variants]
    library = {f"vecadd/{v.name}" for v in fam.variants if v.vendor or v.is_python}
    return targets, library


def test_a_recorded_slow_child_is_split_and_checks_the_same_pairs(tmp_path):
    targets, library = vecadd_targets()
    assert library, "vecadd has library variants (torch, Triton) to put in children of their own"
    times_file = tmp_path / "times.json"
    plain = sanitize_targets(targets, ["memcheck", "initcheck"], tmp_path / "a", jobs=4)
    # The memcheck batch recorded as far slower than its share of a 4-job run: the next run splits it.
    sanitize_times.save(times_file, ChildTimes({key_of(targets, "memcheck"): 100.0,
                                                key_of(targets, "initcheck"): 5.0}))
    split = sanitize_targets(targets, ["memcheck", "initcheck"], tmp_path / "b", jobs=4, times_file=times_file,
                             alone=library)
    assert [(r.label, r.tool) for r in split.results] == [(r.label, r.tool) for r in plain.results]
    assert all(r.clean for r in split.results), [(r.label, r.tool, r.error) for r in split.results if not r.clean]
    alone = {r.label for r in split.results if r.tool == "memcheck" and r.batched_with == 0}
    assert library <= alone
    recorded = sanitize_times.load(times_file)
    assert all(recorded.exact(key_of([t], "memcheck")) is not None for t in targets if f"vecadd/{t.variant}" in library)
    assert split.timing_line() is not None and "longest child" in split.timing_line()


def test_the_planted_bug_is_found_when_its_family_is_split(tmp_path, monkeypatch):
    monkeypatch.setattr(sanitize_times, "CACHE_DIR", tmp_path / "cache")
    targets, _ = vecadd_targets()
    sanitize_times.save(sanitize_times.default_path(), ChildTimes({key_of(targets, "memcheck"): 100.0}))
    bad = KERNELS / "oob_write.cu"
    out = tmp_path / "s.json"
    every = ",".join(t.variant for t in targets)  # with --add, only the user's variants run unless -v names more
    result = CliRunner().invoke(app, ["sanitize", "vecadd", "-v", every, "--add", str(bad), "--tool", "memcheck",
                                      "--out", str(tmp_path / "o"), "--jobs", "4", "--json", str(out)],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and "longest child" in result.output
    runs = json.loads(out.read_text())["runs"]
    dirty = [r for r in runs if r["findings"]]
    assert [r["label"] for r in dirty] == ["vecadd/oob_write"]
    lines = (KERNELS / "oob_write.cu").read_text().splitlines()
    bug = next(i for i, line in enumerate(lines, 1) if "// BUG" in line)
    assert any(f["kind"] == "invalid_write" and f["line"] == bug for f in dirty[0]["findings"])
    assert all(r["error_count"] == 0 for r in runs if r["label"] != "vecadd/oob_write")
    assert {r["label"] for r in runs} == {f"vecadd/{t.variant}" for t in targets} | {"vecadd/oob_write"}
