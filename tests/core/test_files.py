"""Every reader of a user's file goes through gpuprof.files: a hostile file is one InputError, never a crash."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuprof import files, results
from gpuprof.commands.sanitize import import_log
from gpuprof.errors import GpuprofError, InputError, UsageError
from gpuprof.suite_file import load_suite
from gpuprof.variants import catalog
from gpuprof.variants.user import AddSpec, load_kernels_dir, to_variant

GOOD_SUITE = 'schema = 1\n[[case]]\nfamily = "vecadd"\n'
HOSTILE = {
    "binary": bytes(range(256)) * 4,
    "utf16": GOOD_SUITE.encode("utf-16"),
    "latin1": "# René ©\n".encode("latin-1") + GOOD_SUITE.encode(),
    "empty": b"",
    "truncated": b'{"schema": "gpuprof.results", "rows": [',
    "nul in text": b"name = 1\x00\n",
    "bom": b"\xef\xbb\xbf{",
}


def _readers(tmp_path: Path):
    vecadd = catalog.load_family("vecadd")
    return {
        "results": lambda p: results.load(p),
        "suite": lambda p: load_suite(p),
        "manifest": lambda p: catalog.parse_manifest(p),
        "kernels-dir manifest": lambda p: load_kernels_dir(p.parent, vecadd),
        "sanitizer log": lambda p: import_log(p),
        "--add source": lambda p: to_variant(vecadd, AddSpec(p)),
    }


@pytest.mark.parametrize("content", HOSTILE.values(), ids=HOSTILE.keys())
@pytest.mark.parametrize("reader", ["results", "suite", "manifest", "kernels-dir manifest", "sanitizer log",
                                    "--add source"])
def test_every_reader_turns_a_hostile_file_into_one_input_error(tmp_path, reader, content):
    path = tmp_path / ("vecadd.toml" if reader == "kernels-dir manifest" else "f")
    path.write_bytes(content)
    with pytest.raises(GpuprofError) as caught:
        _readers(tmp_path)[reader](path)
    assert isinstance(caught.value, (InputError, UsageError))
    assert "\n" not in caught.value.message.strip() or reader == "suite"
    assert str(path.name) in caught.value.message or reader in ("sanitizer log",)


def test_a_latin1_comment_in_a_students_source_is_read(tmp_path):
    source = tmp_path / "mine.cu"
    source.write_bytes("// René © 2026\n".encode("latin-1") + (
        b'extern "C" __global__ void k(const float* __restrict__ a, const float* __restrict__ b, '
        b'float* __restrict__ c, int n) {}\n'))
    variant = to_variant(catalog.load_family("vecadd"), AddSpec(source))
    assert variant.kernel == "k"
    assert "Ren\ufffd" in files.read_source(source)


def test_read_text_names_the_problem(tmp_path):
    path = tmp_path / "s.toml"
    path.write_bytes("a = 1\n# é\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"s.toml: line 2: not UTF-8 text \(byte 0xe9\)"):
        files.read_text(path)
    path.write_bytes("a".encode("utf-16"))
    with pytest.raises(InputError, match="UTF-16"):
        files.read_text(path)
    with pytest.raises(InputError, match="is a folder"):
        files.read_text(tmp_path)
    with pytest.raises(InputError, match="No such file"):
        files.read_text(tmp_path / "missing")


def test_huge_files_are_refused_before_reading(tmp_path):
    path = tmp_path / "big.json"
    path.write_bytes(b" " * 2048)
    with pytest.raises(InputError, match="more than the 1,024 gpuprof reads"):
        files.read_bytes(path, max_bytes=1024)


def test_outputs_never_clobber_inputs(tmp_path):
    base, new = tmp_path / "a.json", tmp_path / "b.json"
    base.write_text("{}")
    new.write_text("{}")
    with pytest.raises(UsageError, match="--markdown .*b.json is also an input"):
        files.check_outputs([base, new], {"--markdown": new})
    link = tmp_path / "link.json"
    link.symlink_to(base)
    with pytest.raises(UsageError, match="is also an input"):
        files.check_outputs([base], {"--json": link})
    with pytest.raises(UsageError, match="both name"):
        files.check_outputs([], {"--json": tmp_path / "o.json", "--markdown": tmp_path / "o.json"})
    files.check_outputs([base], {"--json": "-", "--markdown": None})


def test_a_file_gpuprof_did_not_write_needs_force(tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("my notes\n")
    with pytest.raises(UsageError, match="not written by gpuprof.*--force"):
        files.check_outputs([], {"--markdown": notes})
    files.check_outputs([], {"--markdown": notes}, force=True)
    ours = tmp_path / "r.json"
    ours.write_text('{"schema": "gpuprof.results"}')
    empty = tmp_path / "summary.md"
    empty.write_text("")
    files.check_outputs([], {"--json": ours, "--markdown": empty})
