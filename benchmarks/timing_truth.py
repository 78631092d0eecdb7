"""Timing truth: gpuprof's medians next to ncu's gpu__time_duration.sum for the same kernels.

Also times each kernel the common way (CUDA events around one launch after a cudaMemset L2
flush, no pre-queued launches), so the table shows where the extra time of that method goes.
Run on a GPU machine:  python benchmarks/timing_truth.py --out DIR
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpuprof import families
from gpuprof.commands.run import RunRequest, run_family
from gpuprof.gpu import cupy, device_info
from gpuprof.measure import timing
from gpuprof.variants import catalog
from gpuprof.variants.launch_plan import make_launch_factory

CASES = [
    ("vecadd", "grid", "2^25"), ("vecadd", "vectorized", "2^25"),
    ("vecadd", "grid", "2^20"), ("vecadd", "vectorized", "2^20"),
    ("vecadd", "grid", "2^16"), ("vecadd", "vectorized", "2^16"),
    ("matmul", "smem_tiled", "4096"), ("matmul", "warptile", "4096"),
    ("matmul", "blocktile_2d", "4096"), ("matmul", "cublas", "4096"),
    ("matmul", "warptile", "1024"), ("matmul", "cublas", "512"),
]


def size_of(family: str, text: str) -> dict[str, int]:
    from gpuprof.variants.sizes import parse_size

    return parse_size(catalog.load_family(family), text)


def memset_events_median(family: str, variant: str, size: dict[str, int], samples: int = 30) -> float:
    """The common recipe: memset-flush the L2, event, launch, event, synchronize; median."""
    cp = cupy()
    fam = catalog.load_family(family)
    host = families.host(family)
    v = fam.variant(variant)
    inputs = host.make_inputs(size, 1)
    out = host.make_output(size)
    launch = make_launch_factory(fam, v, host)(inputs, out, size)
    stream = cp.cuda.Stream(non_blocking=True)
    flush = cp.empty(2 * device_info().l2_bytes, dtype=cp.uint8)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(3):
        launch(stream)
    times = []
    for _ in range(samples):
        cp.cuda.runtime.memsetAsync(flush.data.ptr, 0, flush.nbytes, stream.ptr)
        start.record(stream)
        launch(stream)
        end.record(stream)
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) / 1e3)
    return statistics.median(times)


def ncu_durations(family: str, variant: str, size_text: str, log_dir: Path, count: int = 7) -> list[float]:
    log = log_dir / f"ncu_{family}_{variant}_{size_text.replace('^', 'p')}.csv"
    argv = ["ncu", "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--nvtx",
            "--nvtx-include", f"{family}/{variant}/", "--csv", "--page", "raw", "--print-units", "base",
            "--log-file", str(log), "-f", sys.executable, "-m", "gpuprof", "launch", family, variant,
            "--size", size_text, "--count", str(count), "--warmup", "2"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, env={**os.environ, "LC_ALL": "C"},
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"ncu failed ({done.returncode}): {done.stdout[-2000:]} {done.stderr[-2000:]}")
    lines = [l for l in log.read_text().splitlines() if l.startswith('"')]
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    values = []
    for row in rows[1:] if rows and not rows[0].get("ID", "0").strip().isdigit() else rows:
        try:
            values.append(float(row["gpu__time_duration.sum"]) * 1e-9)
        except (KeyError, ValueError):
            continue
    return per_launch(values, count)


def per_launch(kernel_durations: list[float], count: int) -> list[float]:
    """One sample per profiled launch: the durations of its kernels summed (cuBLAS runs two at
    512^3, reduce and scan several). `gpuprof launch` runs its warm-ups outside the NVTX range,
    so ncu profiles exactly `count` launches and nothing is dropped here. Pure, for tests."""
    if count < 1 or not kernel_durations or len(kernel_durations) % count:
        raise RuntimeError(f"ncu profiled {len(kernel_durations)} kernels, not a multiple of the {count} "
                           "launches in the NVTX range; cannot split them into launches")
    per = len(kernel_durations) // count
    return [sum(kernel_durations[i:i + per]) for i in range(0, len(kernel_durations), per)]


def chosen_cases(text: str) -> list[tuple[str, str, str]]:
    """The CASES named by --cases ('all', or FAMILY/VARIANT/SIZE,...); an unknown name is an error."""
    if text == "all":
        return list(CASES)
    known = {"/".join(case): case for case in CASES}
    wanted = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in known]
    if unknown or not wanted:
        raise SystemExit(f"error: unknown case(s) {', '.join(unknown) or '(none given)'}; known: {', '.join(known)}")
    return [known[name] for name in wanted]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--cases", default="all",
                        help="'all', or a comma list of FAMILY/VARIANT/SIZE from CASES, e.g. matmul/cublas/512")
    args = parser.parse_args()
    cases = chosen_cases(args.cases)
    args.out.mkdir(parents=True, exist_ok=True)
    log_dir = Path(tempfile.mkdtemp(prefix="gpuprof-truth-"))  # ncu logs stay on the machine
    rows = []
    for family, variant, size_text in cases:
        size = size_of(family, size_text)
        medians = {}
        for mode in ("cold", "cupti", "hot", "graph"):
            t0 = time.perf_counter()
            res = run_family(RunRequest(family=family, variants=[variant], size=size,
                                        policy=timing.TimingPolicy(mode=mode)))
            row = res.rows[0]
            if row.timing is None:
                medians[mode] = None
                print(f"{family}/{variant}: {row.check.status} {row.check.reasons}", flush=True)
                continue
            medians[mode] = row.timing.summary.median_s
            medians[f"{mode}_spread"] = row.timing.summary.rel_spread
            medians[f"{mode}_n"] = row.timing.summary.n
            medians[f"{mode}_stop"] = row.timing.stop_reason
            clocks = row.timing.sm_clock_mhz
            medians[f"{mode}_clock_mhz"] = statistics.median(clocks) if clocks else None
            medians[f"{mode}_wall_s"] = time.perf_counter() - t0
        medians["memset_events"] = memset_events_median(family, variant, size)
        try:
            ncu = ncu_durations(family, variant, size_text, log_dir)
            medians["ncu"] = statistics.median(ncu) if ncu else None
            medians["ncu_samples"] = ncu
        except Exception as exc:  # noqa: BLE001  # keep going: any ncu failure is recorded, other rows still count
            medians["ncu"] = None
            medians["ncu_error"] = str(exc)[:500]
        rows.append({"family": family, "variant": variant, "size": size_text, **medians})
        print(json.dumps(rows[-1]), flush=True)
    (args.out / "timing_truth.json").write_text(json.dumps(rows, indent=1))
    print(f"\n{'case':32} {'ncu':>10} {'cold':>10} {'Δcold':>7} {'cupti':>10} {'Δcupti':>7} "
          f"{'memset+ev':>10} {'Δ':>7} {'hot':>10} {'graph':>10} {'spread c/cu':>12}")
    for r in rows:
        ncu = r.get("ncu")
        case = r["family"] + "/" + r["variant"] + " " + r["size"]
        print(f"{case:32} {_us(ncu)} {_us(r.get('cold'))} {_rel(r.get('cold'), ncu)} "
              f"{_us(r.get('cupti'))} {_rel(r.get('cupti'), ncu)} "
              f"{_us(r.get('memset_events'))} {_rel(r.get('memset_events'), ncu)} "
              f"{_us(r.get('hot'))} {_us(r.get('graph'))} "
              f"{(r.get('cold_spread') or 0) * 100:5.2f}%/{(r.get('cupti_spread') or 0) * 100:5.2f}%")


def _rel(x: float | None, ncu: float | None) -> str:
    return f"{(x / ncu - 1) * 100:+6.1f}%" if x and ncu else "   -  "


def _us(x: float | None) -> str:
    return f"{x * 1e6:9.2f}u" if x else "     -    "


if __name__ == "__main__":
    main()
