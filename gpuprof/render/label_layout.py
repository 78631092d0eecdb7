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

    px_offsets = spread([(float(a[0]), float(a[1])) for a in anchors], sizes,
                        (area.x0, area.y0, area.x1, area.y1),
                        [(o[0] / to_points, o[1] / to_points) for o in offsets])
    offsets = [[dx * to_points, dy * to_points] for dx, dy in px_offsets]
    for t, offset, anchor in zip(texts, offsets, anchors):
        t.xyann = (offset[0], offset[1])
        near = abs(offset[0]) <= 12 and -2 <= offset[1] <= 12
        if near and t.arrow_patch is not None:
            t.arrow_patch.set_visible(False)  # right beside its point: no leader needed


Box = tuple[float, float, float, float]


def spread(anchors: list[tuple[float, float]], sizes: list[tuple[float, float]], area: Box,
           offsets: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The repulsion itself, in pixels with y growing upwards: each label's lower left corner sits at
    its anchor plus its offset; returns the offsets moved so that no two labels overlap, no label
    covers a point, and all stay inside `area` (x0, y0, x1, y1). The report page's SVG charts use it
    too (y flipped)."""
    moved_offsets = [list(o) for o in offsets]

    def box_of(i: int) -> Box:
        x = anchors[i][0] + moved_offsets[i][0]
        y = anchors[i][1] + moved_offsets[i][1]
        w, h = sizes[i]
        return x, y, x + w, y + h

    for _ in range(ROUNDS):
        moved = False
        for i in range(len(anchors)):
            for j in range(i + 1, len(anchors)):
                push = _overlap(box_of(i), box_of(j))
                if push is not None:
                    dx, dy = push
                    moved_offsets[i][0] -= dx / 2
                    moved_offsets[i][1] -= dy / 2
                    moved_offsets[j][0] += dx / 2
                    moved_offsets[j][1] += dy / 2
                    moved = True
            for px, py in anchors:
                marker = (px - POINT_PX, py - POINT_PX, px + POINT_PX, py + POINT_PX)
                push = _overlap(marker, box_of(i))
                if push is not None:
                    moved_offsets[i][0] += push[0]
                    moved_offsets[i][1] += push[1]
                    moved = True
            x0, y0, x1, y1 = box_of(i)  # inside the area
            moved_offsets[i][0] += max(area[0] - x0, 0.0) - max(x1 - area[2], 0.0)
            moved_offsets[i][1] += max(area[1] - y0, 0.0) - max(y1 - area[3], 0.0)
        if not moved:
            break
    return [(o[0], o[1]) for o in moved_offsets]


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
