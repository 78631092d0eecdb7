"""Time and peak memory of `gpuprof compare` on an 18k-row results file (issue 16: <= 10 s, <= 300 MB).

Writes two synthetic results files (BASE, and NEW with ~1 % of rows 10 % slower) built from a
recorded row's shape, then runs the CLI in a child process and reads its peak RSS:

    python benchmarks/compare_large.py [--rows 18000] [--samples 60] [--as-written]

--as-written writes the files through gpuprof.results.save, in the layout run and suite write
(the default is one compact json.dumps line). Prints one line: rows, samples per row, file size,
wall and CPU seconds, peak MB, exit code, and the 1-minute load average (CPU seconds matter on a
shared machine, where wall time includes waiting for a core).

Recorded on a shared 2-core CPU machine (18000 rows x 60 samples), CPU seconds inflate with the
load average of the machine (other jobs on the same two cores):
  earlier: per-row scipy calls, full terminal table: wall 223 s, peak 449 MB; then wall 18.8 s,
  CPU 11.4 s, peak 449 MB; again at load 1.0: wall 13.4 s, CPU 13.3 s, peak 469 MB.
  before/after samples packed as float64 arrays while parsing, each row a Row as soon as it is
  parsed, each row's statistics computed once, the report written in pieces, rows one per line:
    default (47 MB files)        before: wall 15.5 s, CPU 15.7 s, 469 MB (load 1.1)
                                 after:  wall  6.4 s, CPU  6.5 s, 281 MB (load 1.4)
    --as-written (67 -> 51 MB)   before: wall 42.5 s, CPU 21.1 s, 624 MB (load 8.1)
                                 after:  wall  7.5 s, CPU  7.6 s, 285 MB (load 1.2)
  On the busy machine (load 5-10) the same "after" runs took 15-17 s of wall and 8.4-9.6 s of CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEMPLATE = REPO / "tests" / "fixtures" / "results" / "smoke_a.json"


def synthetic(rows: int, samples: int, slower: set[int], seed: int) -> dict:
    rng = random.Random(seed)
    data = json.loads(TEMPLATE.read_text())
    template = next(r for r in data["rows"] if r.get("timing"))
    out = []
    for i in range(rows):
        row = json.loads(json.dumps(template))
        row["variant"] = f"v{i:05d}"
        row.pop("id", None)
        median = 1e-4 * (1 + i % 97) * (1.10 if i in slower else 1.0)
        times = sorted(median * (1 + rng.gauss(0, 0.003)) for _ in range(samples))
        row["timing"]["samples_s"] = times
        row["timing"]["sm_clock_mhz"] = [1980.0] * samples
        n = len(times)
        row["timing"]["summary"] = {"n": n, "median_s": times[n // 2], "mean_s": sum(times) / n, "min_s": times[0],
                                    "max_s": times[-1], "p25_s": times[n // 4], "p75_s": times[3 * n // 4],
                                    "rel_spread": (times[3 * n // 4] - times[n // 4]) / times[n // 2]}
        out.append(row)
    data["rows"] = out
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=18_000)
    parser.add_argument("--samples", type=int, default=60)
    parser.add_argument("--as-written", action="store_true", help="write the files with gpuprof.results.save")
    args = parser.parse_args()
    slower = set(range(0, args.rows, 97))
    with tempfile.TemporaryDirectory(prefix="gpuprof-bench-") as tmp:
        base, new = Path(tmp) / "base.json", Path(tmp) / "new.json"
        for path, slow, seed in ((base, set(), 1), (new, slower, 2)):
            data = synthetic(args.rows, args.samples, slow, seed)
            if args.as_written:
                sys.path.insert(0, str(REPO))
                from gpuprof import results

                results.save(results.from_dict(data), path)
            else:
                path.write_text(json.dumps(data))
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "gpuprof", "compare", str(base), str(new),
                               "--json", str(Path(tmp) / "report.json")],
                              capture_output=True, text=True, cwd=REPO, check=False)
        wall = time.perf_counter() - start
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        peak_mb, cpu_s = usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime
        size_mb = new.stat().st_size / 1e6
    print(f"rows={args.rows} samples={args.samples} file={size_mb:.1f}MB wall={wall:.1f}s "
          f"cpu={cpu_s:.1f}s peak_rss={peak_mb:.0f}MB exit={done.returncode} load={os.getloadavg()[0]:.1f}")
    if done.returncode not in (0, 1):
        print(done.stderr[-2000:], file=sys.stderr)


if __name__ == "__main__":
    main()
