"""A results file that describes its own families ("families" block): show, report, compare and
merge of a family this machine does not have (gelu_user, no folder anywhere), at the command line.

The file is a SYNTHETIC test input: made-up sample times on the recorded H100 fixture's environment,
judged by gpuprof's own analysis.derive; no figure here is a measurement."""

from __future__ import annotations

import html
import json
import re
from dataclasses import replace

import pytest

from gpuprof import results
from gpuprof.analysis import ceilings
from gpuprof.analysis.derive import derive
from gpuprof.analysis.stats import summarize
from gpuprof.cli import app
from gpuprof.families import registry
from gpuprof.results import OK, CheckResult, FamilyInfo, Results, Row, Timing, VariantInfo

N = 1 << 24
FORMULA = "GB/s = 8 bytes per element (x read once, y written once) / median time [gelu_user's own]"
# made-up medians (seconds) of the synthetic rows: naive is the baseline, torch the vendor
SYNTHETIC_MEDIANS = {"naive": 100e-6, "vectorized": 60e-6, "torch": 50e-6}


def gelu_info() -> FamilyInfo:
    return FamilyInfo(
        summary="tanh GELU, one element per thread (a user's family folder)", rate_kind="bytes", formula=FORMULA,
        dims=("n",), baseline="naive", vendor_reference="torch", source="/home/someone/ops/gelu_user",
        variants=(VariantInfo("naive", "one element per thread"),
                  VariantInfo("vectorized", "float4 loads", user=True, constraints=("n % 4 == 0",)),
                  VariantInfo("torch", "torch.nn.functional.gelu", vendor=True,
                              call="torch.nn.functional.gelu")),
    )


def synthetic_row(variant: str) -> Row:
    median = SYNTHETIC_MEDIANS[variant]
    samples = [median * f for f in (0.99, 1.0, 1.0, 1.01, 1.0, 0.995, 1.005, 1.0) * 3]
    # flop is set too: without the block, show's stand-in would call these rows FLOP/s rows
    return Row(family="gelu_user", variant=variant, size={"n": N}, vendor=variant == "torch",
               check=CheckResult(status=OK, max_rel_error=1e-7, tolerance=1e-5),
               timing=Timing(mode="cold", samples_s=samples, stop_reason="converged", summary=summarize(samples),
                             sm_clock_mhz=[1980.0] * len(samples)),
               flop=10.0 * N, bytes=8.0 * N, technique=gelu_info().variant(variant).technique)


@pytest.fixture
def synthetic(fixtures_dir, tmp_path, monkeypatch):
    """A synthetic results file of gelu_user in an empty working directory, and a maker of its shards."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(registry.FAMILIES_DIR_ENV, raising=False)
    assert "gelu_user" not in registry.names()
    environment = results.load(fixtures_dir / "results" / "smoke_a.json").environment
    limits = ceilings.from_environment(environment)

    def made(variants, name, shard=None):
        rows = [synthetic_row(v) for v in variants]
        names = set(variants)
        derive(rows, "bytes", "naive" if "naive" in names else None, "torch" if "torch" in names else None, limits)
        outcome = Results(environment=environment, rows=rows, command="synthetic test input",
                          timing_policy={"mode": "cold"}, families={"gelu_user": gelu_info()},
                          shard=shard or {})
        path = tmp_path / name
        results.save(outcome, path)
        return path

    return made


def rate_cells(stdout: str, variant: str) -> str:
    return next(line for line in stdout.splitlines() if line.startswith(variant + " "))


def test_show_renders_a_family_this_machine_lacks_from_the_file(runner, synthetic):
    path = synthetic(["naive", "vectorized", "torch"], "gelu.json")
    shown = runner.invoke(app, ["show", str(path), "--wide"])
    assert shown.exit_code == 0, shown.output
    assert "GB/s" in shown.stdout and "TFLOP/s" not in shown.stdout
    assert "[gelu_user's own]" in shown.stdout  # the block's formula (the footer may wrap it)
    assert "vs naive" in shown.stdout and "vs torch" in shown.stdout
    assert "vendor rows: torch = torch.nn.functional.gelu, PyTorch" in shown.stdout  # the block's call
    gbs = 8.0 * N / SYNTHETIC_MEDIANS["vectorized"] / 1e9
    line = rate_cells(shown.stdout, "vectorized")
    assert f"{gbs:.0f}" in line and "1.67x" in line and "0.833x" in line, line  # vs naive, vs torch


def test_without_the_block_the_old_stand_in_still_guesses(runner, synthetic):
    """Files written before the block load as before: no family here, so the rows are guessed from."""
    path = synthetic(["naive", "torch"], "gelu.json")
    data = json.loads(path.read_text())
    del data["families"]
    path.write_text(json.dumps(data))
    shown = runner.invoke(app, ["show", str(path), "--wide"])
    assert shown.exit_code == 0, shown.output
    assert "TFLOP/s" in shown.stdout and "vs -" in shown.stdout  # rows of a family it does not know


def test_report_page_has_the_files_rate_kind_formula_and_speedups(runner, synthetic, tmp_path):
    path = synthetic(["naive", "vectorized", "torch"], "gelu.json")
    page = tmp_path / "gelu.html"
    done = runner.invoke(app, ["report", str(path), "--html", str(page)])
    assert done.exit_code == 0, done.output
    # the page's words outside its charts (the roofline's axis is FLOP/s for every family)
    text = html.unescape(re.sub(r"<[^>]+>", "", re.sub(r"<svg.*?</svg>", "", page.read_text(), flags=re.DOTALL)))
    assert "GB/s" in text and "TFLOP/s" not in text
    assert "tanh GELU" in text and FORMULA in text  # the block's summary and formula
    assert "vs naive" in text and "vs torch" in text and "best rung vectorized: 0.833× vs torch, 1.67× vs naive" in text


def test_compare_of_the_file_with_itself_is_all_same(runner, synthetic):
    path = synthetic(["naive", "vectorized", "torch"], "gelu.json")
    done = runner.invoke(app, ["compare", str(path), str(path), "--format", "json"])
    assert done.exit_code == 0, done.output
    verdicts = json.loads(done.stdout)["verdicts"]
    assert len(verdicts) == 3 and {v["status"] for v in verdicts} == {"SAME"}


def test_merge_joins_shards_of_a_family_this_machine_lacks(runner, synthetic, tmp_path):
    ids = [f"gelu_user/{v}/{N}" for v in ("naive", "vectorized", "torch")]
    order = {row_id: place for place, row_id in enumerate(ids)}
    first = synthetic(["naive"], "s1.json", {"index": 1, "count": 2, "units": 3, "order": order})
    second = synthetic(["vectorized", "torch"], "s2.json", {"index": 2, "count": 2, "units": 3, "order": order})
    assert results.load(second).rows[0].derived.vs_baseline is None  # its baseline ran in the other shard
    out = tmp_path / "all.json"
    done = runner.invoke(app, ["merge", str(first), str(second), "--json", str(out)])
    assert done.exit_code == 0, done.output
    assert "warning" not in done.stderr
    merged = results.load(out)
    assert merged.families == {"gelu_user": gelu_info()}
    assert [r.variant for r in merged.rows] == ["naive", "vectorized", "torch"]
    by_name = {r.variant: r.derived for r in merged.rows}
    assert by_name["vectorized"].rate_kind == "bytes"
    assert by_name["vectorized"].vs_baseline == pytest.approx(100 / 60, rel=1e-3)
    assert by_name["naive"].vs_vendor == pytest.approx(50 / 100, rel=1e-3)
    shown = runner.invoke(app, ["show", str(out), "--wide"])
    assert shown.exit_code == 0 and "GB/s" in shown.stdout and "vs torch" in shown.stdout


def test_merge_keeps_the_first_description_of_a_family_and_warns(runner, synthetic, tmp_path):
    first = synthetic(["naive"], "a.json")
    second = synthetic(["vectorized", "torch"], "b.json")
    data = json.loads(second.read_text())
    data["families"]["by_name"]["gelu_user"]["formula"] = "GB/s = something else"
    second.write_text(json.dumps(data))
    out = tmp_path / "all.json"
    done = runner.invoke(app, ["merge", str(first), str(second), "--json", str(out)])
    assert done.exit_code == 0, done.output
    assert done.stderr.count("\n") == 1 and "described differently" in done.stderr and "formula" in done.stderr
    assert results.load(out).families["gelu_user"].formula == FORMULA


def test_a_malformed_block_is_one_line_naming_the_file_and_field(runner, synthetic):
    path = synthetic(["naive"], "gelu.json")
    for edit, words in (
        (lambda f: f["by_name"]["gelu_user"].update(rate_kind="watts"), "families.gelu_user.rate_kind"),
        (lambda f: f["by_name"]["gelu_user"]["variants"]["naive"].update(vendor="no"),
         "families.gelu_user.variants.naive.vendor"),
        (lambda f: f.update(version=99), "families.version 99 is newer"),
        (lambda f: f.update(by_name=[]), "families.by_name"),
    ):
        data = json.loads(path.read_text())
        edit(data["families"])
        bad = path.with_name("bad.json")
        bad.write_text(json.dumps(data))
        done = runner.invoke(app, ["show", str(bad)])
        assert done.exit_code == 2, done.output
        assert done.stderr.count("\n") == 1 and str(bad) in done.stderr and words in done.stderr, done.stderr


def test_the_block_survives_a_lean_load_and_a_round_trip(synthetic):
    path = synthetic(["naive", "vectorized", "torch"], "gelu.json")
    assert results.load(path, lean=True).families == {"gelu_user": gelu_info()}
    whole = results.load(path)
    again = results.from_dict(json.loads("".join(results.json_parts(whole))))
    assert again.families == whole.families == {"gelu_user": gelu_info()}
    assert replace(again, rows=[]) == replace(whole, rows=[])


@pytest.mark.parametrize("name", ["smoke_a.json", "h100_matmul_all.json", "h100_ci_a.json"])
def test_a_recorded_file_shows_the_same_with_the_block_as_from_this_machines_families(runner, fixtures_dir,
                                                                                      tmp_path, name):
    """The recorded H100 files (no block) give the registry's families; the same file with the block
    built from those families must print the very same tables."""
    from gpuprof.families.described import family_info

    recorded = tmp_path / "a" / name  # two paths of one length: the header line names the file
    recorded.parent.mkdir()
    recorded.write_bytes((fixtures_dir / "results" / name).read_bytes())
    loaded = results.load(recorded)
    named = {r.family for r in loaded.rows}
    loaded.families = {f: family_info(registry.resolve(f), registry.host_for(registry.resolve(f))) for f in named}
    (tmp_path / "b").mkdir()
    described = results.save(loaded, tmp_path / "b" / name)
    plain = runner.invoke(app, ["show", str(recorded), "--wide"])
    with_block = runner.invoke(app, ["show", str(described), "--wide"])
    assert plain.exit_code == with_block.exit_code and plain.stdout, plain.output
    assert with_block.stdout.replace(str(described), str(recorded)) == plain.stdout
