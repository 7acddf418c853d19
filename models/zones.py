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


def _name_and_body(spec: str, where: str) -> tuple[str, str]:
    name, sep, body = spec.partition("=")
    name = name.strip()
    if not sep or not name or not body.strip():
        raise BadInput(f"{where}: write NAME=coordinates")
    if len(name) > 64 or not all(c.isalnum() or c in "-_. " for c in name):
        raise BadInput(f"{where}: a name is up to 64 letters, digits, spaces or -_.")
    return name, body


def _coord(text: str, where: str, echo: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        raise BadInput(f"{where}: {repr(text) if echo else 'a coordinate'} is not a number") from None
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise BadInput(f"{where}: coordinates are normalised to 0-1" + (f", got {text}" if echo else ""))
    return value


def parse_zone(spec: str, where: str | None = None) -> ZoneSpec:
    """`NAME=x,y x,y x,y ...` -> ZoneSpec (at least 3 corners, a polygon of non-zero area). A refusal names the
    spec, or only `where` (the API's `zones[0]`: its refusals never echo what the caller sent)."""
    from shapely.geometry import Polygon

    echo, where = where is None, where or f"--zone {spec!r}"
    name, body = _name_and_body(spec, where)
    points = []
    for pair in body.split():
        xy = pair.split(",")
        if len(xy) != 2:
            raise BadInput(f"{where}: corners are x,y pairs separated by spaces")
        points.append((_coord(xy[0], where, echo), _coord(xy[1], where, echo)))
    if len(points) < 3:
        raise BadInput(f"{where}: a polygon needs at least 3 points, got {len(points)}")
    if Polygon(points).area <= 0:
        raise BadInput(f"{where}: the polygon has no area")
    return ZoneSpec(name, tuple(points))


def parse_line(spec: str, where: str | None = None) -> LineSpec:
    """`NAME=x1,y1,x2,y2` -> LineSpec (two distinct ends); `where` as for `parse_zone`."""
    echo, where = where is None, where or f"--line {spec!r}"
    name, body = _name_and_body(spec, where)
    parts = body.replace(" ", "").split(",")
    if len(parts) != 4:
        raise BadInput(f"{where}: write NAME=x1,y1,x2,y2")
    x1, y1, x2, y2 = (_coord(p, where, echo) for p in parts)
    if (x1, y1) == (x2, y2):
        raise BadInput(f"{where}: the two ends are the same point")
    return LineSpec(name, (x1, y1), (x2, y2))


def parse_layout(zones: list[str] | None, lines: list[str] | None, echo: bool = True
                 ) -> tuple[tuple[ZoneSpec, ...], tuple[LineSpec, ...]]:
    """Zones and lines from their specs; names are unique across both. Without `echo` (the REST API) a refusal
    names the spec's place (`zones[1]`), not its text."""
    parsed_zones = tuple(parse_zone(z, None if echo else f"zones[{i}]") for i, z in enumerate(zones or []))
    parsed_lines = tuple(parse_line(x, None if echo else f"lines[{i}]") for i, x in enumerate(lines or []))
    seen: set[str] = set()
    for name in [z.name for z in parsed_zones] + [x.name for x in parsed_lines]:
        if name in seen:
            raise BadInput(f"zone/line name {name!r} is used twice" if echo else "a zone/line name is used twice")
        seen.add(name)
    return parsed_zones, parsed_lines
