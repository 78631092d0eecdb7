"""Small pieces the report page's charts are drawn with: escaped text, axis ticks, and the plot
area's mapping from data to pixels. The charts are inline SVG that gpuprof writes itself, so the
page needs no plotting library and fetches nothing; hover values are SVG <title> elements.

Every plot area is a <g class="plot"> carrying its mapping as data attributes (data-x="lo hi log|lin",
data-y=..., data-box="left right top bottom" in pixels), so a reader (or a test) can turn a mark's
pixel position back into the numbers it stands for."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

from gpuprof.render.safe_text import visible

FONT = 'font-family="system-ui,-apple-system,Segoe UI,Roboto,sans-serif"'
GRID, AXIS, MUTED = "#e4e7eb", "#57606a", "#6e7781"
RUNG_COLOUR, BEST_COLOUR, VENDOR_COLOUR, FAILED_COLOUR = "#4c78a8", "#1f4e79", "#6e7781", "#c62828"
CEILING_COLOUR, WARN_COLOUR = "#d95f02", "#9a6700"
# Lines of a size sweep, one per variant; the vendor's grey and dashed.
LINE_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")


def e(text: object) -> str:
    """Text for HTML or SVG: controls and bidi characters made visible (safe_text), then escaped."""
    return html.escape(visible(str(text), newlines=False), quote=True)


def svg_open(width: float, height: float, title: str, css_class: str = "") -> str:
    """An SVG that scales down with its container; its <title> says what it shows."""
    return (f'<svg class="{e(css_class)}" width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.0f} '
            f'{height:.0f}" role="img" {FONT} font-size="12"><title>{e(title)}</title>')


def text(x: float, y: float, words: str, anchor: str = "start", css: str = "", **attrs: object) -> str:
    extra = "".join(f' {k.replace("_", "-")}="{e(v)}"' for k, v in attrs.items())
    klass = f' class="{css}"' if css else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{klass}{extra}>{e(words)}</text>'


def nice_step(span: float, ticks: int = 6) -> float:
    """A round tick step (1, 2 or 5 times a power of ten) giving about `ticks` ticks over span."""
    raw = span / max(ticks, 1)
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def linear_ticks(top: float, ticks: int = 6) -> list[float]:
    if top <= 0:
        return [0.0]
    step = nice_step(top, ticks)
    return [i * step for i in range(int(top / step + 1e-9) + 1)]


def log_ticks(lo: float, hi: float) -> list[float]:
    """Powers of ten in [lo, hi]; with 2 and 5 times them too where the range spans under two decades."""
    steps = (1, 2, 5) if math.log10(hi / lo) < 2 else (1,)
    return [m * 10.0 ** p for p in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1) for m in steps
            if lo <= m * 10.0 ** p <= hi]


def number(value: float) -> str:
    """A tick or value label: 3 significant figures, thousands as 1,200, powers of ten as 1e-3."""
    if value == 0:
        return "0"
    if abs(value) >= 1e5 or abs(value) < 1e-2:
        return f"{value:.0e}".replace("e+0", "e").replace("e-0", "e-").replace("e+", "e")
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


@dataclass(frozen=True)
class Scale:
    """One axis: data range [lo, hi] onto pixels [start, end] (end < start for a y axis)."""

    lo: float
    hi: float
    start: float
    end: float
    log: bool = False

    def __call__(self, value: float) -> float:
        if self.log:
            share = (math.log10(value) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        else:
            share = (value - self.lo) / (self.hi - self.lo) if self.hi != self.lo else 0.0
        return self.start + share * (self.end - self.start)

    def value(self, pixel: float) -> float:
        """The inverse mapping: the data value at a pixel."""
        share = (pixel - self.start) / (self.end - self.start)
        if self.log:
            return 10 ** (math.log10(self.lo) + share * (math.log10(self.hi) - math.log10(self.lo)))
        return self.lo + share * (self.hi - self.lo)

    @property
    def attribute(self) -> str:
        return f"{self.lo!r} {self.hi!r} {'log' if self.log else 'lin'}"


def plot_group(x: Scale, y: Scale) -> str:
    """The opening of a plot area's group, carrying its mapping."""
    box = f"{x.start:.1f} {x.end:.1f} {y.end:.1f} {y.start:.1f}"
    return f'<g class="plot" data-x="{x.attribute}" data-y="{y.attribute}" data-box="{box}">'


def x_grid(x: Scale, y: Scale, values: list[float], label: str) -> str:
    """Vertical grid lines at values, their numbers under the axis, and the axis's name."""
    out = []
    for v in values:
        px = x(v)
        out.append(f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{y.end:.1f}" y2="{y.start:.1f}" stroke="{GRID}"/>')
        out.append(text(px, y.start + 14, number(v), "middle", fill=AXIS, font_size=11))
    out.append(f'<line x1="{x.start:.1f}" x2="{x.end:.1f}" y1="{y.start:.1f}" y2="{y.start:.1f}" stroke="{AXIS}"/>')
    out.append(text((x.start + x.end) / 2, y.start + 30, label, "middle", fill=AXIS, font_size=11.5))
    return "".join(out)


def y_grid(x: Scale, y: Scale, values: list[float], label: str) -> str:
    out = []
    for v in values:
        py = y(v)
        out.append(f'<line x1="{x.start:.1f}" x2="{x.end:.1f}" y1="{py:.1f}" y2="{py:.1f}" stroke="{GRID}"/>')
        out.append(text(x.start - 6, py + 4, number(v), "end", fill=AXIS, font_size=11))
    out.append(f'<line x1="{x.start:.1f}" x2="{x.start:.1f}" y1="{y.end:.1f}" y2="{y.start:.1f}" stroke="{AXIS}"/>')
    mid = (y.start + y.end) / 2
    out.append(f'<text x="{x.start - 46:.1f}" y="{mid:.1f}" text-anchor="middle" fill="{AXIS}" font-size="11.5" '
               f'transform="rotate(-90 {x.start - 46:.1f} {mid:.1f})">{e(label)}</text>')
    return "".join(out)
