"""Labels beside plotted points that never cover each other or a point: a simple repulsion.

Each label starts just right of and above its point; then, in display pixels, every pair of label
boxes that overlap is pushed apart along the line between their centres (mostly vertically: a
label moved up or down still reads as its point's), and a label covering any point is pushed off
it, until nothing overlaps or the rounds run out. Labels stay inside the axes. A label moved away
from its point gets a thin leader line back to it.
"""

from __future__ import annotations

from typing import Any

PAD_PX = 3.0  # clear space kept between two labels, and around a point's marker
POINT_PX = 6.5  # half the side of the box a point's marker occupies
ROUNDS = 300


def annotate_points(ax: Any, points: list[tuple[float, float, str]], fontsize: float = 8,
                    colours: list[str] | None = None) -> list[Any]:
    """One label per (x, y, text) in data coordinates, placed so none overlap; returns the texts."""
    texts = [ax.annotate(text, (x, y), textcoords="offset points", xytext=(7, 3), fontsize=fontsize,
                         color=(colours[i] if colours else "black"), zorder=4,
                         # a roof or grid line under a label must not cross out its letters
                         bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.85},
                         arrowprops={"arrowstyle": "-", "lw": 0.5, "color": "0.5", "shrinkA": 0, "shrinkB": 3})
             for i, (x, y, text) in enumerate(points)]
    if texts:
        separate(ax, texts)
    return texts


def separate(ax: Any, texts: list[Any]) -> None:
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    to_points = 72.0 / fig.dpi
    anchors = [ax.transData.transform(t.xy) for t in texts]
    area = ax.get_window_extent(renderer)
    offsets = [list(t.xyann) for t in texts]  # in points
    sizes = []
    for t in texts:
        box = text_extent(t, renderer)
        sizes.append((box.width, box.height))

    def box_of(i: int) -> tuple[float, float, float, float]:
        x = anchors[i][0] + offsets[i][0] / to_points
        y = anchors[i][1] + offsets[i][1] / to_points
        w, h = sizes[i]
        return x, y, x + w, y + h  # the text's lower left sits at the offset (left/bottom aligned)

    for _ in range(ROUNDS):
        moved = False
        for i in range(len(texts)):
            for j in range(i + 1, len(texts)):
                push = _overlap(box_of(i), box_of(j))
                if push is not None:
                    dx, dy = push
                    offsets[i][0] -= dx / 2 * to_points
                    offsets[i][1] -= dy / 2 * to_points
                    offsets[j][0] += dx / 2 * to_points
                    offsets[j][1] += dy / 2 * to_points
                    moved = True
            for px, py in anchors:
                marker = (px - POINT_PX, py - POINT_PX, px + POINT_PX, py + POINT_PX)
                push = _overlap(marker, box_of(i))
                if push is not None:
                    offsets[i][0] += push[0] * to_points
                    offsets[i][1] += push[1] * to_points
                    moved = True
            x0, y0, x1, y1 = box_of(i)  # inside the axes
            shift_x = max(area.x0 - x0, 0.0) - max(x1 - area.x1, 0.0)
            shift_y = max(area.y0 - y0, 0.0) - max(y1 - area.y1, 0.0)
            offsets[i][0] += shift_x * to_points
            offsets[i][1] += shift_y * to_points
        if not moved:
            break
    for t, offset, anchor in zip(texts, offsets, anchors):
        t.xyann = (offset[0], offset[1])
        near = abs(offset[0]) <= 12 and -2 <= offset[1] <= 12
        if near and t.arrow_patch is not None:
            t.arrow_patch.set_visible(False)  # right beside its point: no leader needed


def text_extent(text: Any, renderer: Any) -> Any:
    """The box of a label's text alone (an Annotation's own extent includes its leader line)."""
    from matplotlib.text import Text

    return Text.get_window_extent(text, renderer)


def _overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> tuple[float, float] | None:
    """How far b must move (dx, dy) to clear a, along the cheaper axis (vertical preferred), or None."""
    ox = min(a[2], b[2]) - max(a[0], b[0]) + PAD_PX
    oy = min(a[3], b[3]) - max(a[1], b[1]) + PAD_PX
    if ox <= 0 or oy <= 0:
        return None
    centre_a = ((a[0] + a[2]) / 2, (a[1] + a[3]) / 2)
    centre_b = ((b[0] + b[2]) / 2, (b[1] + b[3]) / 2)
    if oy <= 2.5 * ox:  # vertical moves are cheaper to read
        return 0.0, (oy if centre_b[1] >= centre_a[1] else -oy)
    return (ox if centre_b[0] >= centre_a[0] else -ox), 0.0
