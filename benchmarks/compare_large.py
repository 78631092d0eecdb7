"""Time and peak memory of `gpuprof compare` on 18k rows of real results (issue 26: <= 10 s, <= 300 MB).

Builds BASE and NEW from the recorded H100 runs of suites/course.toml (tests/fixtures/results:
h100_course_a and h100_course_b, 65 rows each, 10 to 1000 samples a row with their per-sample SM
and NVML clocks and throttle flags), every row replicated under a numbered variant name until the
file has --rows rows, NEW's every 97th row 10 % slower. The files are written as run and suite
write them (gpuprof.results.save: one row per line). Then the CLI runs in a child process:

    python benchmarks/compare_large.py [--rows 18000] [--keep DIR]

Prints one line: rows, mean samples per row, file size, wall and CPU seconds, peak MB, exit code
and the 1-minute load average (on a shared machine wall time includes waiting for a core). Measure
the same command with /usr/bin/time -v for the figures docs/PERFORMANCE.md records.

Figures: docs/PERFORMANCE.md (issue 26: the CLI measured with /usr/bin/time -v on these files).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECORDED = REPO / "tests" / "fixtures" / "results"
sys.path.insert(0, str(REPO))

from gpuprof import results


def replicated(name: str, rows: int, slower_every: int | None) -> results.Results:
    """The recorded file's rows, repeated with numbered variant names until there are `rows`."""
    data = json.loads(gzip.decompress((RECORDED / name).read_bytes()))
    recorded = data["rows"]
    out = []
    for i in range(rows):
        row = dict(recorded[i % len(recorded)])
        row["variant"] = f"{row['variant']}_{i // len(recorded):04d}"
        row.pop("id", None)
        if slower_every and i % slower_every == 0 and row.get("timing"):
            row["timing"] = {**row["timing"], "samples_s": [s * 1.10 for s in row["timing"]["samples_s"]]}
        out.append(row)
    data["rows"] = out
    return results.from_dict(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=18_000)
    parser.add_argument("--keep", type=Path, help="write the two files here and keep them (for /usr/bin/time -v)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gpuprof-bench-") as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        base, new = folder / "base.json", folder / "new.json"
        results.save(replicated("h100_course_a.json.gz", args.rows, None), base)
        made = replicated("h100_course_b.json.gz", args.rows, 97)
        samples = sum(len(r.timing.samples_s) for r in made.rows if r.timing) / len(made.rows)
        results.save(made, new)
        del made
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "gpuprof", "compare", str(base), str(new),
                               "--json", str(folder / "report.json"), "--force"],
                              capture_output=True, text=True, cwd=REPO, check=False, timeout=600)
        wall = time.perf_counter() - start
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        peak_mb, cpu_s = usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime
        size_mb = new.stat().st_size / 1e6
    print(f"rows={args.rows} samples={samples:.0f}/row file={size_mb:.0f}MB wall={wall:.1f}s "
          f"cpu={cpu_s:.1f}s peak_rss={peak_mb:.0f}MB exit={done.returncode} load={os.getloadavg()[0]:.1f}")
    if done.returncode not in (0, 1):
        print(done.stderr[-2000:], file=sys.stderr)


if __name__ == "__main__":
    main()
