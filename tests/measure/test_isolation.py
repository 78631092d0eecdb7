"""The worker process that isolates variants: crashes and hangs cost one job, never the run."""

from __future__ import annotations

import pytest

from gpuprof.commands import run as runner
from gpuprof.errors import GpuprofError, UsageError
from gpuprof.measure import isolation
from gpuprof.measure.timing import TimingPolicy
from gpuprof.results import FAULT, OK, TIMEOUT, CheckResult, Row
from gpuprof.variants.catalog import load_family
from tests.measure import isolation_jobs as jobs


@pytest.fixture
def worker():
    with isolation.Worker(timeout_s=20.0) as w:
        yield w


def test_one_worker_serves_many_jobs(worker):
    events = []
    first = worker.run(jobs.pid)
    answer = worker.run(jobs.double, (21,), on_event=events.append)
    second = worker.run(jobs.pid)
    assert answer.status == isolation.DONE and answer.value == 42
    assert events == ["working"] and answer.last_event == "working"
    assert first.value == second.value  # the same process: start-up is paid once
    assert worker.started == 1


@pytest.mark.parametrize(("job", "detail", "where"), [
    (jobs.segfault, "signal SIGSEGV", "check"),
    (jobs.exits, "exit code 7", "compile"),
])
def test_a_crash_is_reported_and_the_next_job_gets_a_fresh_worker(worker, job, detail, where):
    before = worker.run(jobs.pid).value
    crashed = worker.run(job)
    assert crashed.status == isolation.CRASHED
    assert detail in crashed.detail and crashed.last_event == where
    after = worker.run(jobs.pid)
    assert after.status == isolation.DONE and after.value != before
    assert worker.started == 2


def test_a_hang_is_stopped_at_the_timeout():
    with isolation.Worker(timeout_s=1.0) as worker:
        worker.run(jobs.pid)  # start-up is not counted against the job's timeout
        hung = worker.run(jobs.hangs)
        assert hung.status == isolation.TIMED_OUT
        assert "1 s" in hung.detail and hung.last_event == "check"
        assert worker.run(jobs.double, (1,)).value == 2  # and the run goes on in a fresh worker
        assert worker.started == 2


def test_user_errors_come_back_as_the_same_class_and_the_worker_stays(worker):
    with pytest.raises(UsageError, match="bad --thing"):
        worker.run(jobs.usage_error)
    with pytest.raises(GpuprofError, match="report.csv: line 3: truncated") as caught:
        worker.run(jobs.parse_error)
    assert caught.value.exit_code == 2


def test_a_bug_in_a_job_shows_its_traceback(worker):
    with pytest.raises(isolation.WorkerBug, match="ValueError: a bug in the job"):
        worker.run(jobs.bug)


def test_ctrl_c_in_the_parent_stops_the_worker(worker):
    def interrupt(event):
        raise KeyboardInterrupt

    worker.run(jobs.pid)
    process = worker._process
    with pytest.raises(KeyboardInterrupt):
        worker.run(jobs.hangs, on_event=interrupt)
    assert not process.is_alive()
    assert worker._process is None


def test_timeout_must_be_positive():
    with pytest.raises(UsageError, match="positive"):
        isolation.Worker(timeout_s=0)


class _FakeWorker:
    """Answers like Worker.run would after a crash or a hang, without a process."""

    def __init__(self, answer):
        self.answer, self.retired = answer, 0

    def run(self, fn, args=(), on_event=None):
        return self.answer

    def retire(self):
        self.retired += 1


def _job():
    family = load_family("vecadd")
    return (family, family.variant("grid"), {"n": 4096}, TimingPolicy(), False)


def test_runner_turns_a_timeout_into_a_timeout_row():
    fake = _FakeWorker(isolation.JobOutcome(isolation.TIMED_OUT, detail="no answer within 30 s", last_event="check"))
    row = runner._run_isolated(fake, _job(), lambda step: None)
    assert row.check.status == TIMEOUT
    assert row.check.reasons == [("no answer within 30 s during check; its worker process was stopped "
                                  "(a kernel that never ends? --timeout sets the limit)")]
    assert row.timing is None and row.variant == "grid" and row.size == {"n": 4096}


def test_runner_turns_a_crash_into_a_fault_row():
    fake = _FakeWorker(isolation.JobOutcome(isolation.CRASHED, detail="the worker process died (signal SIGSEGV)",
                                            last_event="time"))
    row = runner._run_isolated(fake, _job(), lambda step: None)
    assert row.check.status == FAULT
    assert row.check.reasons == ["the worker process died (signal SIGSEGV) during time"]


@pytest.mark.parametrize(("status", "retired"), [(FAULT, 1), (OK, 0)])
def test_a_fault_reported_by_the_job_retires_its_worker(status, retired):
    _, _, size, _, _ = _job()
    done = Row(family="vecadd", variant="grid", size=size, vendor=False, check=CheckResult(status=status))
    fake = _FakeWorker(isolation.JobOutcome(isolation.DONE, value=done))
    assert runner._run_isolated(fake, _job(), lambda step: None) is done
    assert fake.retired == retired


def test_a_spawned_worker_importing_python_m_gpuprof_does_not_run_the_cli(monkeypatch):
    """Under `python -m gpuprof`, spawn re-imports gpuprof.__main__ as __mp_main__ in each worker."""
    import runpy

    import gpuprof.cli

    def must_not_run():
        raise AssertionError("the CLI ran inside a worker")

    monkeypatch.setattr(gpuprof.cli, "main", must_not_run)
    runpy.run_module("gpuprof.__main__", run_name="__mp_main__")
    with pytest.raises(AssertionError, match="inside a worker"):
        runpy.run_module("gpuprof.__main__", run_name="__main__")
