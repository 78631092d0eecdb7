"""Reading the report page's SVG charts back: each chart as an XML tree, and a mark's pixel position
turned back into data through the mapping its plot area carries (render/page_svg.plot_group)."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def charts(page: str, css: str) -> list[ET.Element]:
    """Every <svg> of the page whose class starts with `css` ("ladder", "roofline", "sweep"), parsed."""
    found = re.findall(rf'(<svg class="{css}[^"]*".*?</svg>)', page, flags=re.DOTALL)
    return [ET.fromstring(svg.replace("<svg ", f'<svg xmlns="{SVG[1:-1]}" ', 1)) for svg in found]


def plot(svg: ET.Element) -> ET.Element:
    found = svg.find(f".//{SVG}g[@class='plot']")
    assert found is not None, "a chart without its plot area"
    return found


def data_at(axis: str, box: tuple[float, float], pixel: float) -> float:
    """The value at a pixel of an axis given as 'lo hi log|lin' over the pixel span box=(start, end)."""
    lo, hi, kind = axis.split()
    share = (pixel - box[0]) / (box[1] - box[0])
    if kind == "log":
        return 10 ** (math.log10(float(lo)) + share * (math.log10(float(hi)) - math.log10(float(lo))))
    return float(lo) + share * (float(hi) - float(lo))


def x_value(group: ET.Element, pixel: float) -> float:
    left, right, _, _ = (float(v) for v in group.attrib["data-box"].split())
    return data_at(group.attrib["data-x"], (left, right), pixel)


def y_value(group: ET.Element, pixel: float) -> float:
    _, _, top, bottom = (float(v) for v in group.attrib["data-box"].split())
    return data_at(group.attrib["data-y"], (bottom, top), pixel)


def centre(mark: ET.Element) -> tuple[float, float]:
    """A point's centre: a circle's cx/cy, or the data-cx/data-cy a square or diamond carries."""
    shape = next(iter(mark))
    if "cx" in shape.attrib:
        return float(shape.attrib["cx"]), float(shape.attrib["cy"])
    return float(shape.attrib["data-cx"]), float(shape.attrib["data-cy"])
