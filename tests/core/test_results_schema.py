"""The results file: round trip, to_dict shape, load errors (exit 2, one line), atomic write."""

from __future__ import annotations

import copy
import json
import math
import os
from pathlib import Path

import pytest

from gpuprof import files, results
from gpuprof.analysis.stats import summarize
from gpuprof.errors import EnvironmentProblem, InputError
from gpuprof.files import atomic_write_text
from gpuprof.results import (
    CHECK_STATUSES,
    DERIVED_KEYS,
    FAILED_STATUSES,
    OK,
    SCHEMA_NAME,
    SCHEMA_VERSION,
    WRONG,
    CheckResult,
    Derived,
    Results,
    Row,
    Timing,
    from_dict,
    load,
    save,
    to_dict,
)
from gpuprof.row_parts import Advice, Finding, HotLine, NcuPart, SanitizerPart

# ---------------------------------------------------------------- helpers


def timed(samples: list[float]) -> Timing:
    return Timing(mode="cold", samples_s=samples, stop_reason="converged", summary=summarize(samples),
                  sm_clock_mhz=[1980.0] * len(samples), note="L2 flushed")


def full_ncu() -> NcuPart:
    """A row's ncu part with every field set, the newer ones (levels, stalls, hot lines, advice) too."""
    return NcuPart(kernels=2, duration_ns=1.2e6, sm_pct=41.5, memory_pct=88.0, dram_pct=86.0,
                   achieved_occupancy_pct=62.0, occupancy_limiter="registers", registers=40, shared_mem_bytes=8192.0,
                   dram_bytes=5.0e7, dram_read_bytes=3.4e7, dram_write_bytes=1.6e7,
                   level_bytes={"l1": 2.1e8, "l2": 9.0e7, "dram": 5.0e7}, flop=2.0 * 4096 * 2048 * 512,
                   instructions=3.0e6, limiter="dram", top_stall="long_scoreboard", top_stall_pct=55.0,
                   stalls={"long_scoreboard": 55.0, "barrier": 30.0, "mio_throttle": 15.0},
                   hot_lines=(HotLine("smem_tiled.cu", 40, 31.5, "acc += As[ty][k] * Bs[k][tx];",
                                      {"mio_throttle": 60.0, "short_scoreboard": 40.0}),),
                   advice=(Advice("UncoalescedGlobalAccess", "This kernel has uncoalesced global accesses.", 37.5),
                           Advice("LaunchConfiguration", "The grid is small.", None, "WRN")),
                   report="gpuprof-with/ncu/matmul_1_variants.ncu-rep")


def full_sanitizer() -> SanitizerPart:
    return SanitizerPart(verdict="findings", findings=2, first="racecheck: hazard smem_tiled.cu:40",
                         tools={"memcheck": "clean", "racecheck": "2 findings"}, size={"m": 127, "n": 129, "k": 65},
                         found=(Finding("racecheck", "hazard", "smem_tiled(float*)", "smem_tiled.cu", 40,
                                        "As[ty][tx] = A[i];", "Error: Race reported between Write access"),
                                Finding("racecheck", "hazard", "smem_tiled(float*)")))


def sample_results() -> Results:
    ok = Row(family="matmul", variant="smem_tiled", size={"m": 4096, "n": 2048, "k": 512}, vendor=False,
             check=CheckResult(status=OK, max_rel_error=3.1e-7, tolerance=1e-4,
                               sizes_checked=[{"m": 127, "n": 129, "k": 65}], reasons=[]),
             timing=timed([1.2e-3, 1.1e-3, 1.3e-3, 1.15e-3]), flop=2.0 * 4096 * 2048 * 512,
             bytes=4.0 * (4096 * 512 + 512 * 2048 + 4096 * 2048), technique="smem tiles",
             ncu=full_ncu(), sanitizer=full_sanitizer())
    wrong = Row(family="matmul", variant="naive", size={"m": 4096, "n": 2048, "k": 512}, vendor=False,
                check=CheckResult(status=WRONG, max_rel_error=math.nan, tolerance=1e-4,
                                  reasons=["NaN in output (poisoned element never written)"]))
    vendor = Row(family="matmul", variant="cublas", size={"m": 4096, "n": 2048, "k": 512}, vendor=True,
                 check=CheckResult(status=OK, max_rel_error=0.0), timing=timed([5e-4, 5.1e-4]))
    return Results(environment={"gpu_name": "NVIDIA H100 80GB HBM3", "sm_count": 132},
                   rows=[ok, wrong, vendor], command="gpuprof run matmul", created_utc="2025-01-01T00:00:00Z",
                   timing_policy={"mode": "cold", "min_samples": 10})


def valid_dict() -> dict:
    return json.loads(json.dumps(to_dict(sample_results())))


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data))
    return path


def load_error(path: Path) -> InputError:
    with pytest.raises(InputError) as info:
        load(path)
    assert info.value.exit_code == 2
    assert "\n" not in info.value.message
    assert str(path) in info.value.message
    return info.value


# ---------------------------------------------------------------- round trip and shape


def test_save_load_round_trip(tmp_path):
    original = sample_results()
    loaded = load(save(original, tmp_path / "r.json"))
    nan_row = loaded.rows[1]
    assert math.isnan(nan_row.check.max_rel_error)
    # NaN != NaN, so compare that row with its NaN replaced, and everything else directly.
    nan_row.check.max_rel_error = original.rows[1].check.max_rel_error = None
    assert loaded == original
    assert isinstance(loaded.rows[0].timing, Timing) and isinstance(loaded.rows[0].check, CheckResult)


def test_round_trip_is_stable_on_disk(tmp_path):
    first = save(sample_results(), tmp_path / "a.json")
    second = save(load(first), tmp_path / "b.json")
    assert first.read_text() == second.read_text()


def test_to_dict_has_schema_and_row_ids():
    data = to_dict(sample_results())
    assert data["schema"] == SCHEMA_NAME
    assert data["schema_version"] == SCHEMA_VERSION
    assert [r["id"] for r in data["rows"]] == [
        "matmul/smem_tiled/4096x2048x512", "matmul/naive/4096x2048x512", "matmul/cublas/4096x2048x512"]
    for out, row in zip(data["rows"], sample_results().rows):
        assert out["id"] == row.id == f"{row.family}/{row.variant}/{results.size_label(row.size)}"


def test_row_id_follows_the_family_dimension_order():
    assert results.row_id("vecadd", "grid", {"n": 268435456}) == "vecadd/grid/268435456"
    assert results.size_label({"m": 1, "n": 2, "k": 3}) == "1x2x3"


def test_raw_samples_are_kept_in_the_file(tmp_path):
    original = sample_results()
    data = json.loads(save(original, tmp_path / "r.json").read_text())
    assert data["rows"][0]["timing"]["samples_s"] == original.rows[0].timing.samples_s
    assert data["rows"][1]["timing"] is None


FIGURES = Derived(rate_kind="flop", rate=3.2e13, pct_of_ceiling=47.8, ceiling_name="FP32 (non-tensor)",
                  ceiling_value=66.9e12, ceiling_source="datasheet H100 SXM5", pct_of_measured=61.9,
                  measured_name="measured cuBLAS SGEMM", measured_source="measured 2026-11-20", over_ceiling=None,
                  floor_s=2.1e-4, floor="1.37e+10 FLOP at the FP32 (non-tensor) peak 66.9 TFLOP/s",
                  vs_baseline=12.5, vs_vendor=0.62, measured_value=51.7e12)


def test_derived_figures_round_trip_as_the_typed_object(tmp_path):
    original = sample_results()
    original.rows[0].derived = FIGURES
    path = save(original, tmp_path / "r.json")
    raw = json.loads(path.read_text())["rows"][0]["derived"]
    assert list(raw) == list(DERIVED_KEYS)  # the keys the file has always had, then the speedups
    assert "measured_value" not in raw
    back = load(path).rows[0].derived
    assert isinstance(back, Derived) and back == FIGURES
    assert back.measured_value == pytest.approx(100 * FIGURES.rate / FIGURES.pct_of_measured)  # rate / %
    assert load(path).rows[1].derived is None


def test_a_derived_dict_written_before_speedups_were_kept_still_loads(tmp_path):
    data = valid_dict()
    old = {key: value for key, value in results.derived_to_dict(FIGURES).items() if not key.startswith("vs_")}
    data["rows"][0]["derived"] = old
    loaded = load(write_json(tmp_path / "r.json", data)).rows[0].derived
    assert loaded == Derived(**{**old, "vs_baseline": None, "vs_vendor": None})
    data["rows"][0]["derived"] = {"rate": 1e12, "pct_of_ceiling": 1.5, "ceiling_name": "FP32", "ceiling_source": "x"}
    oldest = load(write_json(tmp_path / "r.json", data)).rows[0].derived  # the first files' four keys
    assert (oldest.rate, oldest.ceiling_name, oldest.floor_s, oldest.vs_baseline) == (1e12, "FP32", None, None)


@pytest.mark.parametrize(("key", "value"), [("rate", "fast"), ("vs_baseline", True), ("ceiling_name", 3)])
def test_a_derived_field_of_the_wrong_type_is_named(tmp_path, key, value):
    data = valid_dict()
    data["rows"][0]["derived"] = {**results.derived_to_dict(FIGURES), key: value}
    message = load_error(write_json(tmp_path / "r.json", data)).message
    assert f"derived.{key}" in message.split("malformed results file", 1)[1]


def test_a_failed_row_is_one_of_the_failed_statuses():
    for status in CHECK_STATUSES:
        row = Row(family="vecadd", variant="grid", size={"n": 1}, vendor=False, check=CheckResult(status=status))
        assert row.failed == (status in FAILED_STATUSES)
    assert {s for s in CHECK_STATUSES if s not in FAILED_STATUSES} == {OK, results.SKIPPED}


def test_from_dict_ignores_the_derived_id():
    data = valid_dict()
    data["rows"][0]["id"] = "something/else/1"
    assert from_dict(data).rows[0].id == "matmul/smem_tiled/4096x2048x512"


# ---------------------------------------------------------------- load errors


def test_load_missing_file(tmp_path):
    assert "cannot read" in load_error(tmp_path / "missing.json").message


@pytest.mark.parametrize("text", ["", "{", "not json", '{"schema": "gpuprof.results",'])
def test_load_not_json(tmp_path, text):
    path = tmp_path / "r.json"
    path.write_text(text)
    assert "not valid JSON" in load_error(path).message


@pytest.mark.parametrize("data", [[], [valid_dict()], "gpuprof.results", 1, None])
def test_load_json_that_is_not_an_object(tmp_path, data):
    assert "not a gpuprof results file" in load_error(write_json(tmp_path / "r.json", data)).message


@pytest.mark.parametrize("schema", ["pytest-benchmark", "nvbench", None, ""])
def test_load_foreign_schema(tmp_path, schema):
    data = valid_dict()
    data["schema"] = schema
    assert "not a gpuprof results file" in load_error(write_json(tmp_path / "r.json", data)).message


def test_load_future_schema_version(tmp_path):
    data = valid_dict()
    data["schema_version"] = SCHEMA_VERSION + 1
    message = load_error(write_json(tmp_path / "r.json", data)).message
    assert f"schema_version {SCHEMA_VERSION + 1}" in message and "upgrade gpuprof" in message


@pytest.mark.parametrize("version", [None, "1", 1.0])
def test_load_schema_version_not_an_integer(tmp_path, version):
    data = valid_dict()
    data["schema_version"] = version
    assert "schema_version" in load_error(write_json(tmp_path / "r.json", data)).message


def mutated(change) -> dict:
    data = valid_dict()
    change(data)
    return data


MALFORMED = {
    "missing rows": (lambda d: d.pop("rows"), "rows"),
    "missing environment": (lambda d: d.pop("environment"), "environment"),
    "rows not a list": (lambda d: d.update(rows=3), "must be a list of rows, not 3"),
    "row missing check": (lambda d: d["rows"][0].pop("check"), "check"),
    "row missing family": (lambda d: d["rows"][0].pop("family"), "family"),
    "samples as strings": (lambda d: d["rows"][0]["timing"].update(samples_s=["1e-3", "2e-3"]), "samples"),
    "samples as one string": (lambda d: d["rows"][0]["timing"].update(samples_s="1e-3"), "samples"),
    "unknown check status": (lambda d: d["rows"][0]["check"].update(status="maybe"), "maybe"),
    "unknown check field": (lambda d: d["rows"][0]["check"].update(colour="red"), "colour"),
    "unknown summary field": (lambda d: d["rows"][0]["timing"]["summary"].update(p99_s=1.0), "p99_s"),
    "summary median as a string": (lambda d: d["rows"][0]["timing"]["summary"].update(median_s="fast"), "median_s"),
    "size not integers": (lambda d: d["rows"][0]["size"].update(m="big"), "big"),
    "timing not an object": (lambda d: d["rows"][0].update(timing=[1, 2]), "timing must be an object"),
    "flop as a string": (lambda d: d["rows"][0].update(flop="many"), "flop"),
    "vendor as a string": (lambda d: d["rows"][0].update(vendor="no"), "vendor"),
    "max_rel_error as a string": (lambda d: d["rows"][0]["check"].update(max_rel_error="tiny"), "max_rel_error"),
}


@pytest.mark.parametrize(("change", "word"), MALFORMED.values(), ids=MALFORMED.keys())
def test_load_malformed_results(tmp_path, change, word):
    message = load_error(write_json(tmp_path / "r.json", mutated(change))).message
    assert "malformed results file" in message
    assert word in message.split("malformed results file", 1)[1]


def test_load_row_that_is_not_an_object(tmp_path):
    data = mutated(lambda d: d.update(rows=["matmul/naive"]))
    assert "malformed results file" in load_error(write_json(tmp_path / "r.json", data)).message


def test_unknown_check_status_is_named():
    with pytest.raises(InputError, match="maybe"):
        from_dict(mutated(MALFORMED["unknown check status"][0]))


def test_from_dict_without_a_path_still_explains():
    with pytest.raises(InputError, match="not a gpuprof results file"):
        from_dict({"rows": []})


# ---------------------------------------------------------------- atomic write


def test_write_into_a_missing_directory(tmp_path):
    target = tmp_path / "missing" / "r.json"
    with pytest.raises(InputError) as info:
        save(sample_results(), target)
    assert info.value.exit_code == 2
    assert str(target.parent) in info.value.message
    assert not target.parent.exists()


def test_existing_file_is_replaced_whole(tmp_path):
    target = tmp_path / "r.json"
    target.write_text("x" * 100_000)
    atomic_write_text(target, "short")
    assert target.read_text() == "short"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


@pytest.mark.parametrize(("raised", "expected"), [(OSError(28, "No space left on device"), EnvironmentProblem),
                                                  (KeyboardInterrupt(), KeyboardInterrupt)])
def test_failed_rename_keeps_the_old_file_and_leaves_no_temp_file(tmp_path, monkeypatch, raised, expected):
    target = save(sample_results(), tmp_path / "r.json")
    before = target.read_bytes()

    def failing_replace(src, dst):
        assert Path(src).exists() and Path(src).parent == tmp_path  # written next to the target
        raise raised

    monkeypatch.setattr(files.os, "replace", failing_replace)
    with pytest.raises(expected):
        atomic_write_text(target, "{}")
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]
    load(target)  # still a valid results file


def test_failed_rename_is_a_one_line_input_error(tmp_path, monkeypatch):
    def failing_replace(src, dst):
        raise OSError(13, "Permission denied")

    monkeypatch.setattr(files.os, "replace", failing_replace)
    with pytest.raises(InputError) as info:
        save(sample_results(), tmp_path / "r.json")
    assert "Permission denied" in info.value.message and "\n" not in info.value.message
    assert not (tmp_path / "r.json").exists()


def test_save_does_not_change_the_results(tmp_path):
    original = sample_results()
    snapshot = copy.deepcopy(to_dict(original))
    save(original, tmp_path / "r.json")
    after = to_dict(original)
    after["rows"][1]["check"]["max_rel_error"] = snapshot["rows"][1]["check"]["max_rel_error"] = None
    assert after == snapshot
    assert os.listdir(tmp_path) == ["r.json"]



def test_the_results_files_timing_modes_are_the_timers():
    from gpuprof import results as results_file
    from gpuprof import suite_file
    from gpuprof.measure.timing import MODES

    assert tuple(MODES) == results_file.TIMING_MODES == suite_file.TIMING_MODES


# ---------------------------------------------------------------- the "families" block


def described_results() -> Results:
    from gpuprof.results import FamilyInfo, VariantInfo

    info = FamilyInfo(summary="C = A·B", rate_kind="flop", formula="TFLOP/s = 2·m·n·k / median time",
                      dims=("m", "n", "k"), baseline="naive", vendor_reference="cublas", source="matmul",
                      variants=(VariantInfo("naive", "one thread per output"),
                                VariantInfo("smem_tiled", "smem tiles", precision="fp32", constraints=("k % 32 == 0",)),
                                VariantInfo("cublas", "cublasSgemm", vendor=True, call="cublas.sgemm")))
    return Results(**{**sample_results().__dict__, "families": {"matmul": info}})


def test_the_families_block_round_trips_through_save_load_and_a_lean_load(tmp_path):
    original = described_results()
    path = save(original, tmp_path / "r.json")
    data = json.loads(path.read_text())
    assert list(data)[:2] == ["environment", "families"] and data["families"]["version"] == results.FAMILIES_VERSION
    entry = data["families"]["by_name"]["matmul"]
    assert entry["rate_kind"] == "flop" and entry["dims"] == ["m", "n", "k"]
    assert entry["variants"]["smem_tiled"] == {"technique": "smem tiles", "precision": "fp32", "vendor": False,
                                               "user": False, "constraints": ["k % 32 == 0"], "call": None}
    assert load(path).families == from_dict(data).families == original.families
    assert load(path, lean=True).families == original.families
    assert save(load(path), tmp_path / "again.json").read_text() == path.read_text()


def test_a_file_without_the_block_loads_as_before_and_is_written_without_one(tmp_path):
    plain = sample_results()
    assert "families" not in to_dict(plain)
    path = save(plain, tmp_path / "r.json")
    assert load(path).families == {} and load(path, lean=True).families == {}
    assert save(load(path), tmp_path / "again.json").read_text() == path.read_text()


def test_the_block_is_built_from_a_family_and_its_host():
    from gpuprof.families import registry
    from gpuprof.families.described import family_info

    family = registry.resolve("vecadd")
    host = registry.host_for(family)
    info = family_info(family, host)
    assert (info.rate_kind, info.formula, info.source) == (host.RATE, host.FORMULA, "vecadd")
    assert [v.name for v in info.variants] == family.variant_names
    assert info.baseline == family.baseline and info.vendor_reference == family.vendor_reference
    assert all(v.constraints == () for v in info.variants)  # no `require` on this branch's Variant


def test_joined_blocks_keep_the_first_description_and_union_variants():
    from dataclasses import replace

    from gpuprof.families.described import joined

    info = described_results().families["matmul"]
    into = {"matmul": replace(info, variants=info.variants[:1])}
    assert joined(into, {"matmul": replace(info, source="/elsewhere/matmul")}) == []
    assert into["matmul"].variants == info.variants  # the variants only the second had, added
    notes = joined(into, {"matmul": replace(info, rate_kind="bytes")})
    assert len(notes) == 1 and "rate_kind" in notes[0] and into["matmul"].rate_kind == "flop"


@pytest.mark.parametrize("edit, words", [
    (lambda f: f.update(version="1"), "families.version must be a positive integer"),
    (lambda f: f.update(version=2), "families.version 2 is newer"),
    (lambda f: f["by_name"]["matmul"].pop("rate_kind"), "families.matmul.rate_kind must be text"),
    (lambda f: f["by_name"]["matmul"].update(dims="mnk"), "families.matmul.dims must be a list"),
    (lambda f: f["by_name"]["matmul"]["variants"]["naive"].update(constraints=[1]),
     "families.matmul.variants.naive.constraints"),
    (lambda f: f["by_name"]["matmul"].update(vendor_reference=3), "families.matmul.vendor_reference must be text"),
])
def test_a_malformed_block_is_refused_naming_the_field(edit, words):
    data = to_dict(described_results())
    edit(data["families"])
    with pytest.raises(InputError) as caught:
        from_dict(json.loads(json.dumps(data)), "r.json")
    assert caught.value.message.startswith("r.json: malformed results file: ") and words in caught.value.message
