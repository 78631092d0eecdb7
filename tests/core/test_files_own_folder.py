"""files.own_folder: the one rule for a folder gpuprof keeps its own files in inside --out (CUPTI's
records, sanitize's CuPy cache): made where missing, never a link or a file."""

from __future__ import annotations

import pytest

from gpuprof.commands.sanitize import fresh_dir
from gpuprof.errors import UsageError
from gpuprof.files import own_folder


def test_a_missing_folder_is_made_and_a_folder_is_kept(tmp_path):
    made = own_folder(tmp_path / "a" / "b")
    assert made.is_dir()
    (made / "kept").write_text("x")
    assert own_folder(made) == made and (made / "kept").read_text() == "x"


@pytest.mark.parametrize("make", ["link", "dangling link", "file"])
def test_a_link_or_a_file_is_refused(tmp_path, make):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "theirs").write_text("a user's file")
    place = tmp_path / "records"
    if make == "link":
        place.symlink_to(victim)
    elif make == "dangling link":
        place.symlink_to(tmp_path / "nowhere")
    else:
        place.write_text("not a folder")
    with pytest.raises(UsageError) as refused:
        own_folder(place)
    assert ("symbolic link" in refused.value.message) == (make != "file")
    assert (victim / "theirs").read_text() == "a user's file"


def test_sanitize_never_empties_a_folder_through_a_link(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "theirs").write_text("a user's file")
    (tmp_path / "cache").symlink_to(victim)
    with pytest.raises(UsageError):
        fresh_dir(tmp_path / "cache")
    assert (victim / "theirs").read_text() == "a user's file"
    (tmp_path / "fresh").mkdir()
    (tmp_path / "fresh" / "old").write_text("x")
    assert list(fresh_dir(tmp_path / "fresh").iterdir()) == []
