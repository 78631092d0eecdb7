"""Results files kept compressed (`.json.gz`, as a CI job archives them) read as they are by show and
compare; a corrupt, truncated or oversized gzip file is one line naming it."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuprof import results
from gpuprof.cli import app
from gpuprof.errors import InputError
from gpuprof.files import read_lines, read_text

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "results" / "h100_user_family.json"


def test_a_gzipped_results_file_loads_like_the_plain_one(tmp_path):
    packed = tmp_path / "run.json.gz"
    packed.write_bytes(gzip.compress(RECORDED.read_bytes()))
    plain, unpacked = results.load(RECORDED), results.load(packed)
    assert [(r.family, r.variant, r.size) for r in unpacked.rows] == [(r.family, r.variant, r.size) for r in plain.rows]


def test_show_and_compare_take_gzipped_files(tmp_path):
    packed = tmp_path / "run.json.gz"
    packed.write_bytes(gzip.compress(RECORDED.read_bytes()))
    shown = CliRunner().invoke(app, ["show", str(packed)], env={"COLUMNS": "120"})
    assert shown.exit_code == 0, shown.output
    assert "gelu" in shown.output
    compared = CliRunner().invoke(app, ["compare", str(packed), str(RECORDED)], env={"COLUMNS": "120"})
    assert compared.exit_code in (0, 1), compared.output  # 1: a row judged slower; never an error
    assert "Traceback" not in compared.output


def test_corrupt_and_truncated_gzip_are_one_line(tmp_path):
    whole = gzip.compress(RECORDED.read_bytes())
    truncated = tmp_path / "t.json.gz"
    truncated.write_bytes(whole[: len(whole) // 2])
    corrupt = tmp_path / "c.json.gz"
    corrupt.write_bytes(whole[:20] + bytes(64) + whole[84:])
    for path in (truncated, corrupt):
        with pytest.raises(InputError) as info:
            results.load(path)
        assert str(path) in info.value.message and "\n" not in info.value.message


def test_a_gzip_bomb_stops_at_the_limit(tmp_path):
    bomb = tmp_path / "bomb.gz"
    bomb.write_bytes(gzip.compress(b"\n" * 5_000_000))  # 5 MB of newlines in a few kB
    assert bomb.stat().st_size < 20_000
    with pytest.raises(InputError, match="once decompressed"):
        list(read_lines(bomb, max_bytes=1_000_000, gunzip=True))
    with pytest.raises(InputError, match="once decompressed"):
        read_text(bomb, max_bytes=1_000_000, gunzip=True)


def test_without_gunzip_a_gzip_file_is_binary(tmp_path):
    packed = tmp_path / "x.gz"
    packed.write_bytes(gzip.compress(b"hello\n"))
    with pytest.raises(InputError):
        read_text(packed)
