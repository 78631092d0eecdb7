"""`gpuprof sanitize`'s start order and splitting from recorded child times, and the times file
itself (written atomically, a missing or corrupt one ignored). No GPU: run_one is faked."""

from __future__ import annotations

import json
import os
import threading

import pytest

from gpuprof.commands import sanitize, sanitize_times
from gpuprof.commands.sanitize import SanitizeResult
from gpuprof.commands.sanitize_plan import FIXED_CHILD_S, SanitizeJob, plan_jobs, schedule
from gpuprof.commands.sanitize_times import ChildKey, ChildTimes, key_of
from gpuprof.tools.target import LaunchTarget

MNIST = [LaunchTarget("mnist", v, {"batch": 6}) for v in ("eager", "compiled", "hand")]
REDUCE = [LaunchTarget("reduce", v, {"n": 1000}) for v in ("naive", "shuffle", "torch")]
VECADD = [LaunchTarget("vecadd", v, {"n": 4097}) for v in ("grid", "vectorized", "one_block", "torch")]
LIBRARY = {"mnist/eager", "mnist/compiled", "reduce/torch", "vecadd/torch"}
TOOLS = ["memcheck", "initcheck", "synccheck"]


def recorded(*entries: tuple[str, list[LaunchTarget], float]) -> ChildTimes:
    return ChildTimes({key_of(targets, tool): seconds for tool, targets, seconds in entries})


def started(jobs: list[SanitizeJob]) -> list[tuple[str, str]]:
    return [(j.tool, j.label) for j in jobs]


def course_times(mnist_initcheck: float = 40.0) -> ChildTimes:
    """The shape of the H100 run: mnist's three variants slow, the big families' batches not."""
    return recorded(
        ("initcheck", MNIST, mnist_initcheck), ("memcheck", MNIST, 12.0), ("synccheck", MNIST, 2.6),
        ("initcheck", REDUCE, 9.0), ("memcheck", REDUCE, 8.0), ("synccheck", REDUCE, 2.5),
        ("initcheck", VECADD, 6.0), ("memcheck", VECADD, 5.0), ("synccheck", VECADD, 2.4),
    )


def test_recorded_times_start_the_slowest_child_first_however_few_its_variants():
    jobs, _ = plan_jobs([*MNIST, *REDUCE, *VECADD], TOOLS)
    order = schedule(jobs, course_times(mnist_initcheck=20.0), workers=3, alone=LIBRARY)  # share 22.5 s: no split
    assert started(order)[:3] == [("initcheck", "mnist/eager,compiled,hand"), ("memcheck", "mnist/eager,compiled,hand"),
                                  ("initcheck", "reduce/naive,shuffle,torch")]
    assert [j.expected_s for j in order] == sorted((j.expected_s for j in order), reverse=True)


def test_without_records_the_static_cost_orders_by_tool_then_batch_size():
    jobs, _ = plan_jobs([*MNIST, *VECADD], ["synccheck", "initcheck"])
    order = schedule(jobs, ChildTimes(), workers=16, alone=LIBRARY)
    assert started(order) == [("initcheck", "vecadd/grid,vectorized,one_block,torch"),
                              ("initcheck", "mnist/eager,compiled,hand"),
                              ("synccheck", "vecadd/grid,vectorized,one_block,torch"),
                              ("synccheck", "mnist/eager,compiled,hand")]
    assert len(order) == len(jobs)  # nothing is split on a guess


def test_a_child_never_seen_is_ordered_by_the_prior_among_recorded_ones():
    times = recorded(("initcheck", MNIST, 30.0))
    jobs, _ = plan_jobs([*MNIST, *VECADD], ["initcheck"])
    order = schedule(jobs, times, workers=1)
    assert started(order) == [("initcheck", "mnist/eager,compiled,hand"),
                              ("initcheck", "vecadd/grid,vectorized,one_block,torch")]
    assert order[1].expected_s == FIXED_CHILD_S + 3 * 0.5 * 4  # the prior: tool cost x variants


def test_a_child_slower_than_its_share_is_split_library_variants_alone_and_starts_first():
    jobs, _ = plan_jobs([*MNIST, *REDUCE, *VECADD], TOOLS)
    times = course_times()
    share = sum(times.entries.values()) / 4
    assert times.exact(key_of(MNIST, "initcheck")) > share > times.exact(key_of(MNIST, "memcheck"))  # the premise
    order = schedule(jobs, times, workers=4, alone=LIBRARY)
    mnist_initcheck = [j for j in order if j.tool == "initcheck" and j.targets[0].family == "mnist"]
    assert [j.label for j in mnist_initcheck] == ["mnist/eager", "mnist/compiled", "mnist/hand"]
    assert started(order)[:3] == [("initcheck", "mnist/eager"), ("initcheck", "mnist/compiled"),
                                  ("initcheck", "mnist/hand")]
    assert all(j.expected_s == 40.0 for j in mnist_initcheck)  # at most the whole child's time: an upper bound
    # only the child over its share is split; every (variant, tool) pair is still planned exactly once
    assert len(order) == len(jobs) + 2
    pairs = sorted((t.variant, j.tool) for j in order for t in j.targets)
    assert pairs == sorted((t.variant, j.tool) for j in jobs for t in j.targets)


def test_no_split_with_one_job_at_a_time_or_under_the_share():
    jobs, _ = plan_jobs([*MNIST, *REDUCE, *VECADD], TOOLS)
    assert len(schedule(jobs, course_times(), workers=1, alone=LIBRARY)) == len(jobs)
    assert len(schedule(jobs, course_times(mnist_initcheck=10.0), workers=4, alone=LIBRARY)) == len(jobs)


def test_a_split_child_of_cuda_variants_only_is_cut_into_runs_of_neighbours():
    cuda = [LaunchTarget("matmul", f"v{i}", {"m": 3, "n": 3, "k": 3}) for i in range(6)]
    jobs, _ = plan_jobs(cuda, ["initcheck", "synccheck"])
    times = recorded(("initcheck", cuda, 30.0), ("synccheck", cuda, 2.0))
    order = schedule(jobs, times, workers=2)  # share 16 s: 30 s needs two children
    assert started(order)[:2] == [("initcheck", "matmul/v0,v1,v2"), ("initcheck", "matmul/v3,v4,v5")]


def test_the_split_is_the_same_on_the_next_run_once_the_parts_have_times_of_their_own():
    jobs, _ = plan_jobs([*MNIST, *REDUCE, *VECADD], TOOLS)
    times = course_times()
    first = schedule(jobs, times, workers=4, alone=LIBRARY)
    parts = {"mnist/eager": 25.0, "mnist/compiled": 30.0, "mnist/hand": 5.0}
    after = times.merged((j.key, parts[j.label]) for j in first if j.label in parts and j.tool == "initcheck")
    second = schedule(jobs, after, workers=4, alone=LIBRARY)
    assert sorted(started(first)) == sorted(started(second))
    assert started(second)[:2] == [("initcheck", "mnist/compiled"), ("initcheck", "mnist/eager")]


def test_a_variant_new_to_a_recorded_family_makes_that_child_unrecorded():
    jobs, _ = plan_jobs([*MNIST, LaunchTarget("mnist", "graph", {"batch": 6})], ["initcheck"])
    order = schedule(jobs, course_times(), workers=4, alone=LIBRARY)
    assert len(order) == 1  # its time is a guess: not split


# ---------------------------------------------------------------------------------------------
# the times file


def test_times_round_trip_and_merge_keeps_the_newest(tmp_path, monkeypatch):
    path = tmp_path / "cache" / "sanitize-times.json"
    times = course_times()
    assert sanitize_times.save(path, times) is None
    back = sanitize_times.load(path)
    assert back.entries == {k: round(v, 2) for k, v in times.entries.items()}
    key = key_of(MNIST, "initcheck")
    merged = back.merged([(key, 33.0)])
    assert merged.exact(key) == 33.0 and list(merged.entries)[-1] == key  # newest last
    monkeypatch.setattr(sanitize_times, "KEEP", 2)
    assert len(back.merged([(key, 1.0)])) == 2


def test_defines_and_size_are_part_of_a_childs_key():
    plain = key_of(MNIST, "memcheck")
    defined = key_of([LaunchTarget("mnist", v, {"batch": 6}, defines={"THREADS": 128}) for v in ("eager",)],
                     "memcheck")
    assert plain.context != defined.context and defined.options == ("--define", "THREADS=128")
    assert key_of([LaunchTarget("mnist", "eager", {"batch": 8})], "memcheck").size == "batch=8"


@pytest.mark.parametrize("content", ["", "{not json", '["a list"]', '{"schema": "gpuprof.other"}',
                                     '{"schema": "gpuprof.sanitize-times/1", "children": [{"tool": 1}]}',
                                     '{"schema": "gpuprof.sanitize-times/1", "children": 7}'])
def test_a_corrupt_times_file_is_no_times(tmp_path, content):
    path = tmp_path / "sanitize-times.json"
    path.write_text(content)
    assert len(sanitize_times.load(path)) == 0


def test_a_missing_times_file_is_no_times(tmp_path):
    assert len(sanitize_times.load(tmp_path / "none.json")) == 0


def test_the_times_file_is_replaced_atomically_or_left_as_it_was(tmp_path, monkeypatch):
    path = tmp_path / "sanitize-times.json"
    assert sanitize_times.save(path, course_times()) is None
    before = path.read_text()

    def no_rename(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", no_rename)
    problem = sanitize_times.save(path, ChildTimes({ChildKey("memcheck", "vecadd", ("grid",), "n=1"): 1.0}))
    assert problem is not None and "not recorded" in problem and "no space left" in problem
    assert path.read_text() == before  # the old file intact
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary left behind


# ---------------------------------------------------------------------------------------------
# through sanitize_targets, with the children faked


@pytest.fixture
def fake_children(monkeypatch):
    """run_one replaced: every child is clean; records the order children started in."""
    calls: list[tuple[str, str]] = []
    lock = threading.Lock()

    def fake_run_one(exe, name, target, label, log, leak_check=False, env=None):
        with lock:
            calls.append((name, target[target.index("launch") + 2]))
        return SanitizeResult(label, name, error_count=0, log=log)

    monkeypatch.setattr(sanitize.tool, "find_sanitizer", lambda explicit=None: "compute-sanitizer")
    monkeypatch.setattr(sanitize, "run_one", fake_run_one)
    return calls


def test_a_run_records_its_children_and_the_next_run_splits_and_orders_by_them(tmp_path, fake_children, monkeypatch):
    planned: list[list[SanitizeJob]] = []

    def spy(*args, **kwargs):  # the start order, as handed to the pool (threads then race to log)
        planned.append(schedule(*args, **kwargs))
        return planned[-1]

    monkeypatch.setattr(sanitize, "schedule", spy)
    times_file = tmp_path / "times.json"
    targets = [*MNIST, *REDUCE, *VECADD]
    first = sanitize.sanitize_targets(targets, TOOLS, tmp_path / "logs", jobs=1, times_file=times_file,
                                      alone=LIBRARY)
    document = json.loads(times_file.read_text())
    assert document["schema"] == "gpuprof.sanitize-times/1" and len(document["children"]) == 9
    # Pretend the H100's times were recorded: mnist's initcheck child far the slowest.
    sanitize_times.save(times_file, course_times())
    fake_children.clear()
    second = sanitize.sanitize_targets(targets, TOOLS, tmp_path / "logs", jobs=4, times_file=times_file,
                                       alone=LIBRARY)
    assert started(planned[-1])[:3] == [("initcheck", "mnist/eager"), ("initcheck", "mnist/compiled"),
                                        ("initcheck", "mnist/hand")]
    assert sorted(fake_children) == sorted((j.tool, ",".join(t.variant for t in j.targets)) for j in planned[-1])
    # the same results, every variant under every tool, in target-then-tool order
    assert [(r.label, r.tool, r.clean) for r in second.results] == [(r.label, r.tool, r.clean) for r in first.results]
    # memcheck, initcheck (split off: alone), synccheck
    assert [r.batched_with for r in second.results if r.label == "mnist/eager"] == [2, 0, 2]
    assert len(sanitize_times.load(times_file)) == 9 + 3  # the parts' times added to the batches'


def test_a_corrupt_times_file_is_ignored_and_rewritten(tmp_path, fake_children):
    times_file = tmp_path / "times.json"
    times_file.write_text("\x00garbage{")
    run = sanitize.sanitize_targets(VECADD, ["memcheck"], tmp_path / "logs", jobs=2, times_file=times_file)
    assert [r.clean for r in run.results] == [True] * 4 and run.notes == []
    assert len(sanitize_times.load(times_file)) == 1


def test_the_run_reports_its_wall_time_and_longest_child(tmp_path, fake_children):
    run = sanitize.sanitize_targets([*MNIST, *VECADD], ["memcheck", "synccheck"], tmp_path, jobs=2)
    assert run.wall_seconds is not None and run.longest_child is not None
    assert run.longest_child.seconds == max(r.seconds for r in run.results if r.seconds is not None)
    line = run.timing_line()
    assert line is not None and line.startswith(f"wall {run.wall_seconds:.1f} s; longest child: ")
    assert " variants) " in run.longest_child.child or "/" in run.longest_child.child


def test_child_names_in_the_timing_line():
    assert SanitizeJob(tuple(MNIST), "initcheck").short == "mnist (3 variants) initcheck"
    assert SanitizeJob((MNIST[1],), "initcheck").short == "mnist/compiled initcheck"
    run = sanitize.SanitizeRun([], wall_seconds=28.44,
                               longest_child=sanitize.ChildTime("mnist/compiled initcheck", 19.12))
    assert run.timing_line() == "wall 28.4 s; longest child: mnist/compiled initcheck 19.1 s"
    assert sanitize.SanitizeRun([]).timing_line() is None
