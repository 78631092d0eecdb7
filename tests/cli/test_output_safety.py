"""Outputs are decided by what a path is and by gpuprof's own marker (issue 27): a device or a
/dev/stdout-style link is written into, never replaced; a user's file, whatever words it holds, is
replaced only with --force; gpuprof's own outputs (JSON schema, Markdown mark, plot metadata) are
known again; a full device is one line, exit 3."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from gpuprof import files
from gpuprof.cli import app
from gpuprof.errors import EnvironmentProblem, UsageError

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "tests" / "fixtures" / "results" / "smoke_a.json"


def _link_to(tmp_path: Path, name: str, device: str) -> Path:
    """A link to the device in the test's folder: were a writer to replace it, the link would go, not
    the machine's device."""
    link = tmp_path / name
    link.symlink_to(device)
    return link


def test_a_link_to_dev_null_is_written_into_and_stays_a_link(tmp_path, runner):
    null = _link_to(tmp_path, "null", "/dev/null")
    result = runner.invoke(app, ["list", "--json", str(null)])
    assert result.exit_code == 0, result.output
    assert null.is_symlink() and stat.S_ISCHR(os.stat(null).st_mode)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_full_device_is_one_line_exit_3_and_stays_a_device(tmp_path, runner):
    full = _link_to(tmp_path, "full", "/dev/full")
    result = runner.invoke(app, ["list", "--json", str(full), "--force"])
    assert result.exit_code == 3, result.output
    assert result.stderr.strip() == f"error: cannot write {full}: no space left on device"
    assert full.is_symlink() and stat.S_ISCHR(os.stat(full).st_mode)


def test_json_to_dev_stdout_is_json_on_stdout_as_with_dash():
    done = subprocess.run([sys.executable, "-m", "gpuprof", "list", "vecadd", "--json", "/dev/stdout"],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)},
                          check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["schema"] == "gpuprof.list"  # the whole of stdout: no table mixed in


def test_stdout_on_a_full_device_is_one_line_exit_3():
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "gpuprof", "list"], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    assert done.returncode == 3
    assert done.stderr.strip() == "error: cannot write to stdout: no space left on device"


@pytest.mark.parametrize("mine", [
    b"# my notes\n\nthese notes mention gpuprof in their first line\n",
    b"\x89PNG\r\n\x1a\n" + bytes(64),
    b'<svg xmlns="http://www.w3.org/2000/svg"><title>gpuprof</title></svg>',
    b'{"schema": "mine", "tool": "gpuprof"}',
    b'[{"name": "my benchmark", "unit": "us", "value": 1}]',
])
def test_a_users_file_is_not_gpuprofs_whatever_words_it_holds(tmp_path, mine):
    path = tmp_path / "mine"
    path.write_bytes(mine)
    assert not files.is_own(path)
    with pytest.raises(UsageError, match="not written by gpuprof"):
        files.check_outputs([], {"--json": path})


def test_gpuprofs_own_outputs_are_known_again(tmp_path, runner):
    markdown, document, gab = tmp_path / "s.md", tmp_path / "c.json", tmp_path / "gab.json"
    base = tmp_path / "base.json"
    base.write_bytes(RESULTS.read_bytes())
    argv = ["compare", str(base), str(RESULTS), "--markdown", str(markdown), "--json", str(document),
            "--export-gab", str(gab)]
    assert runner.invoke(app, argv).exit_code == 0
    assert markdown.read_text().endswith(files.MARKDOWN_MARK)
    assert json.loads(document.read_text())["schema"] == "gpuprof.compare"
    assert all(files.is_own(p) for p in (markdown, document, gab))
    again = runner.invoke(app, argv)  # replaced without --force: they are gpuprof's
    assert again.exit_code == 0, again.output


def test_a_plot_carries_gpuprofs_mark(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib

    from gpuprof.render.roofline_plot import plot_metadata

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for name in ("r.png", "r.svg"):
        fig = plt.figure()
        fig.savefig(tmp_path / name, metadata=plot_metadata(tmp_path / name))
        plt.close(fig)
        assert files.is_own(tmp_path / name), name
    plain = tmp_path / "plain.png"
    fig = plt.figure()
    fig.savefig(plain)
    plt.close(fig)
    assert not files.is_own(plain)  # matplotlib's own PNG is a user's, not gpuprof's


def test_a_fifo_or_device_is_refused_as_input_without_being_opened(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero"), Path("/dev/null")):
        with pytest.raises(files.InputError, match="not a regular file"):
            files.read_bytes(path)


def test_enospc_is_the_machines_state(tmp_path, monkeypatch):
    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", full)
    with pytest.raises(EnvironmentProblem, match="no space left on device"):
        files.atomic_write_text(tmp_path / "r.json", "{}")


def test_a_link_to_a_regular_file_is_never_written_through(tmp_path):
    target = tmp_path / "real.json"
    target.write_text('{"schema": "gpuprof.list"}')
    link = tmp_path / "link.json"
    link.symlink_to(target)
    with pytest.raises(UsageError, match="never writes through a link"):
        files.atomic_write_text(link, '{"schema": "gpuprof.list", "x": 1}')
    with pytest.raises(UsageError, match="symbolic link"):
        files.check_outputs([], {"--json": link}, force=True)
    assert link.is_symlink() and target.read_text() == '{"schema": "gpuprof.list"}'


def test_a_report_page_is_known_by_its_generator_tag_and_a_foreign_page_is_not(tmp_path):
    from gpuprof.files import HTML_MARK, is_own

    ours, theirs = tmp_path / "ours.html", tmp_path / "theirs.html"
    ours.write_text(f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">{HTML_MARK}<title>x</title></head></html>")
    theirs.write_text("<!DOCTYPE html>\n<html><head><title>my notes about gpuprof</title></head></html>")
    assert is_own(ours) and not is_own(theirs)
