"""The roofline as a PNG or SVG (matplotlib): the two roofs and one labelled point per variant."""

from __future__ import annotations

from pathlib import Path

from gpuprof.analysis.roofline import Point, Roof
from gpuprof.errors import EnvironmentProblem, UsageError


def save_roofline(points: list[Point], roof: Roof, path: Path, title: str) -> Path:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise EnvironmentProblem("--plot needs matplotlib: pip install 'gpuprof[plot]'") from None
    # One compute roof per precision the points use (FP32 always): a TF32 GEMM sits under the TF32 one.
    precisions = list(dict.fromkeys(["fp32", *(p.precision for p in points if roof.peak(p.precision))]))
    ridges = [r for q in precisions if (r := roof.ridge_for(q))]
    lo = min([p.intensity for p in points] + [min(ridges) / 100]) / 2
    hi = max([p.intensity for p in points] + [max(ridges) * 100]) * 2
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    fig, ax = plt.subplots(figsize=(8, 5.5), dpi=120)
    for q in precisions:
        peak, ridge = roof.peak(q), roof.ridge_for(q)
        assert peak is not None and ridge is not None  # fp32's peak is the roof's own; the others were kept for one
        ax.loglog(xs, [(roof.attainable(x, q) or 0) / 1e12 for x in xs], lw=2, color="black" if q == "fp32" else None,
                  label=f"roof: DRAM, {roof.name(q)} {peak / 1e12:.1f} TFLOP/s")
        ax.axvline(ridge, color="grey", ls=":", lw=1)
    for p in points:
        ax.scatter(p.intensity, p.flops / 1e12, s=40, zorder=3)
        ax.annotate(p.label, (p.intensity, p.flops / 1e12), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    if not path.parent.is_dir():
        raise UsageError(f"--plot {path}: directory {path.parent} does not exist")
    fig.savefig(path)
    plt.close(fig)
    return path
