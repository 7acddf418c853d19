"""Zones (polygons) and lines drawn on the picture, in coordinates normalised 0-1, from flags, TOML or the API.

One parser and one set of checks for every surface: a bad spec raises `BadInput` (exit 2 on the CLI, 422 on
the API) naming the spec at fault. Geometry is shapely's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from models.errors import BadInput


@dataclass(frozen=True)
class ZoneSpec:
    name: str
    points: tuple[tuple[float, float], ...]  # the polygon's corners, normalised 0-1


@dataclass(frozen=True)
class LineSpec:
    name: str
    start: tuple[float, float]
    end: tuple[float, float]


def _name_and_body(spec: str, flag: str) -> tuple[str, str]:
    name, sep, body = spec.partition("=")
    name = name.strip()
    if not sep or not name or not body.strip():
        raise BadInput(f"{flag} {spec!r}: write NAME=coordinates")
    if len(name) > 64 or not all(c.isalnum() or c in "-_. " for c in name):
        raise BadInput(f"{flag} {spec!r}: a name is up to 64 letters, digits, spaces or -_.")
    return name, body


def _coord(text: str, flag: str, spec: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise BadInput(f"{flag} {spec!r}: {text!r} is not a number") from None
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise BadInput(f"{flag} {spec!r}: coordinates are normalised to 0-1, got {text}")
    return value


def parse_zone(spec: str) -> ZoneSpec:
    """`NAME=x,y x,y x,y ...` -> ZoneSpec (at least 3 corners, a polygon of non-zero area)."""
    from shapely.geometry import Polygon

    name, body = _name_and_body(spec, "--zone")
    points = []
    for pair in body.split():
        xy = pair.split(",")
        if len(xy) != 2:
            raise BadInput(f"--zone {spec!r}: corners are x,y pairs separated by spaces")
        points.append((_coord(xy[0], "--zone", spec), _coord(xy[1], "--zone", spec)))
    if len(points) < 3:
        raise BadInput(f"--zone {spec!r}: a polygon needs at least 3 points, got {len(points)}")
    if Polygon(points).area <= 0:
        raise BadInput(f"--zone {spec!r}: the polygon has no area")
    return ZoneSpec(name, tuple(points))


def parse_line(spec: str) -> LineSpec:
    """`NAME=x1,y1,x2,y2` -> LineSpec (two distinct ends)."""
    name, body = _name_and_body(spec, "--line")
    parts = body.replace(" ", "").split(",")
    if len(parts) != 4:
        raise BadInput(f"--line {spec!r}: write NAME=x1,y1,x2,y2")
    x1, y1, x2, y2 = (_coord(p, "--line", spec) for p in parts)
    if (x1, y1) == (x2, y2):
        raise BadInput(f"--line {spec!r}: the two ends are the same point")
    return LineSpec(name, (x1, y1), (x2, y2))


def parse_layout(zones: list[str] | None, lines: list[str] | None) -> tuple[tuple[ZoneSpec, ...],
                                                                              tuple[LineSpec, ...]]:
    """Zones and lines from their specs; names are unique across both."""
    parsed_zones = tuple(parse_zone(z) for z in zones or [])
    parsed_lines = tuple(parse_line(x) for x in lines or [])
    seen: set[str] = set()
    for name in [z.name for z in parsed_zones] + [x.name for x in parsed_lines]:
        if name in seen:
            raise BadInput(f"zone/line name {name!r} is used twice")
        seen.add(name)
    return parsed_zones, parsed_lines
