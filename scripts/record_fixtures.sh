#!/usr/bin/env bash
# Re-record the parser fixtures through gpuprof's own invocation of ncu, nsys and
# compute-sanitizer, on a machine with a GPU, so a new Nsight release has a documented path:
#
#   scripts/record_fixtures.sh [OUT_DIR]          (default: tests/fixtures/tools)
#
# Every file is named after the tool and its version, `<tool>-<version>__<what>.<ext>`
# (e.g. ncu-2025.3.1__launch_vecadd_grid.ncu-rep), with a `.source.txt` sidecar saying how it
# was made. Existing fixtures of other versions are left alone: the tests read every version
# present, so old and new releases are both checked. Then, on any machine:
#
#   python -m pytest -q tests/parsers tests/cli/test_ncu_success.py tests/parsers/test_torch_trace.py
#
# A failing test there is a format change of the new release: fix the parser, never the fixture.
set -euo pipefail

OUT=${1:-tests/fixtures/tools}
PY=${PYTHON:-python}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT"
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 || echo "unknown GPU")
TODAY=$(date -u +%Y-%m-%d)

version_of() {  # the first x.y.z in the tool's --version output
    "$@" --version 2>&1 | grep -oE '[0-9]{4}\.[0-9]+\.[0-9]+' | head -1
}

sidecar() {  # sidecar FILE_STEM COMMAND NOTES
    cat > "$OUT/$1.source.txt" <<EOF
Origin: primary capture by scripts/record_fixtures.sh on ${GPU}, ${TODAY}.
Command: $2
Content: the files exactly as gpuprof's invocation wrote them (paths outside the repository may appear in binary reports).
Notes: $3
EOF
}

# --- Nsight Compute: reports of gpuprof's own argv (tools/ncu.py SECTIONS and METRICS) -----------
if command -v ncu >/dev/null; then
    V=$(version_of ncu)
    "$PY" -m gpuprof ncu vecadd --variants grid,torch --out "$WORK/ncu" > "$WORK/ncu.console" 2>&1 || true
    for variant in grid torch; do
        stem="ncu-${V}__launch_vecadd_${variant}"
        if [[ -f "$WORK/ncu/vecadd_${variant}.ncu-rep" ]]; then
            cp "$WORK/ncu/vecadd_${variant}.ncu-rep" "$OUT/$stem.ncu-rep"
            sed "s#$WORK/ncu/#gpuprof-ncu/#g" "$WORK/ncu/vecadd_${variant}.log" > "$OUT/$stem.log"
            for page in raw details; do  # the CSV pages the fallback reader asks for (docs/tools.md, "ncu: CSV pages, units and locale")
                LC_ALL=C ncu --import "$OUT/$stem.ncu-rep" --csv --page "$page" --print-units base \
                    > "$OUT/${stem}_${page}.csv"
            done
            sidecar "$stem" "gpuprof ncu vecadd --variants $variant (then ncu --import --csv --page raw|details --print-units base)" \
                "one profiled launch inside NVTX ranges vecadd > $variant"
        else
            echo "ncu: no report for $variant (see $WORK/ncu.console):" >&2; cat "$WORK/ncu.console" >&2
        fi
    done
else
    echo "ncu not on PATH: skipped" >&2
fi

# --- Nsight Systems: gpuprof nsys's profile log, stats CSV and SQLite export --------------------
NSYS=$("$PY" -c 'from gpuprof.tools.nsys import find_nsys; print(find_nsys())' 2>/dev/null || true)
if [[ -n "$NSYS" ]]; then
    V=$(version_of "$NSYS")
    "$PY" -m gpuprof nsys vecadd --variants grid --out "$WORK/nsys" > "$WORK/nsys.console" 2>&1 || true
    stem="nsys-${V}__vecadd-grid"
    for kind in stats.txt profile.log sqlite; do
        [[ -f "$WORK/nsys/vecadd-grid.$kind" ]] && cp "$WORK/nsys/vecadd-grid.$kind" "$OUT/$stem.$kind"
    done
    sidecar "$stem" "gpuprof nsys vecadd --variants grid" \
        "stats.txt: nsys stats --format csv of the four reports gpuprof asks for; sqlite: the export it read"
else
    echo "nsys not found: skipped" >&2
fi

# --- The PyTorch-profiler fallback (what gpuprof nsys does without nsys) -------------------------
if "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    V=$("$PY" -c 'import torch; print(torch.__version__.split("+")[0])')
    for variant in grid torch; do
        "$PY" - "$WORK/torch" "$variant" <<'EOF'
import sys
from pathlib import Path
from gpuprof.commands import nsys
from gpuprof.variants import catalog
from gpuprof.variants.sizes import parse_size
fam = catalog.load_family("vecadd")
nsys.torch_profile_family(fam, fam.select(sys.argv[2]), parse_size(fam, None), Path(sys.argv[1]))
EOF
        stem="torch-${V}__vecadd-${variant}"
        "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); d["traceName"]=sys.argv[3]; json.dump(d, open(sys.argv[2],"w"))' \
            "$WORK/torch/vecadd-${variant}.trace.json" "$OUT/$stem.trace.json" "vecadd-${variant}.trace.json"
        sidecar "$stem" "commands/nsys.py torch_profile_family(vecadd, $variant) (gpuprof nsys without nsys)" \
            "Kineto Chrome trace; traceName reduced to the file name"
    done
fi

# --- compute-sanitizer: each tool on the planted bugs of tests/kernels ---------------------------
if command -v compute-sanitizer >/dev/null; then
    V=$(version_of compute-sanitizer)
    for case in "memcheck oob_write" "racecheck racy_smem" "initcheck uninit_read" "synccheck divergent_barrier"; do
        set -- $case
        "$PY" -m gpuprof sanitize vecadd --add "tests/kernels/$2.cu" --tool "$1" --out "$WORK/san-$2" \
            > "$WORK/san-$2.console" 2>&1 || true
        log=$(ls "$WORK/san-$2"/*"$2"*"$1"*.log 2>/dev/null | head -1 || true)
        if [[ -n "$log" ]]; then
            stem="sanitizer-${V}__${1}_${2}"
            sed "s#$PWD/##g" "$log" > "$OUT/$stem.log"
            sidecar "$stem" "gpuprof sanitize vecadd --add tests/kernels/$2.cu --tool $1" "the tool's log as gpuprof kept it"
        else
            echo "sanitize $1 $2: no log (see $WORK/san-$2.console)" >&2
        fi
    done
fi

echo "recorded into $OUT:"
ls -1 "$OUT" | grep -E '^(ncu|nsys|torch|sanitizer)-[0-9]' || true
