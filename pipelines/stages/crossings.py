"""Line crossings of tracks, with hysteresis: a crossing counts once the track has been seen on the new side
`hits` times in a row, so a box jittering on the line (or a false track flickering over it) does not count a
crossing each way; with `hits` 1 every step over the line counts at once. A sighting at least `margin` (a
share of the picture) beyond the line counts at once too: a box jitters by a few hundredths, while an object
that steps well over the line and turns back within `hits` sightings has crossed twice."""

from __future__ import annotations

from shapely.geometry import LineString


def side_of(line, x: float, y: float) -> str:
    """Which side of `line` (start -> end, y down) a point lies: 'left' or 'right' looking along the line."""
    (x1, y1), (x2, y2) = line.start, line.end
    return "right" if (x2 - x1) * (y - y1) - (y2 - y1) * (x - x1) > 0 else "left"


def distance_to(line, x: float, y: float) -> float:
    """How far the point lies from the line through `line`'s ends (in the picture's 0-1 coordinates)."""
    (x1, y1), (x2, y2) = line.start, line.end
    return abs((x2 - x1) * (y - y1) - (y2 - y1) * (x - x1)) / max(((x2 - x1) ** 2 + (y2 - y1) ** 2) ** 0.5, 1e-9)


class LineCounter:
    """Per (track, line): the side the track was last settled on and a pending crossing (its first step over
    the line, with how many sightings in a row it has had on the new side since)."""

    def __init__(self, hits: int = 1, margin: float = 0.0):
        self.hits = max(1, int(hits))
        self.margin = float(margin)  # 0: off
        self._settled: dict[tuple[int, str], str] = {}
        self._pending: dict[tuple[int, str], tuple[dict, int]] = {}

    def step(self, lines: list, tid: int, before: tuple[float, float] | None, point: tuple[float, float],
             base: dict) -> list[dict]:
        """The crossings that the sighting at `point` (after `before`, None for a track's first) completes;
        each is `base` (label, track id, time of the step over the line) with the line and the direction."""
        out = []
        for line, geom in lines:
            key, side = (tid, line.name), side_of(line, *point)
            settled = self._settled.setdefault(key, side if before is None else side_of(line, *before))
            if side == settled:
                self._pending.pop(key, None)  # back on its side before the crossing was confirmed
                continue
            crossing, seen = self._pending.get(key, (None, 0))
            if crossing is None:
                if before is None or before == point or not LineString([before, point]).intersects(geom):
                    self._settled[key] = side  # it went round the line's end: a new side, no crossing
                    continue
                crossing = {"line": line.name, **base, "direction": f"{settled}_to_{side}"}
            if seen + 1 >= self.hits or 0 < self.margin <= distance_to(line, *point):
                out.append(crossing)
                self._settled[key] = side
                self._pending.pop(key, None)
            else:
                self._pending[key] = (crossing, seen + 1)
        return out

    def drop(self, tid: int) -> None:
        """Forget track `tid` (lost for good)."""
        self._keep(lambda key: key[0] != tid)

    def forget(self, names: set[str]) -> None:
        """Drop the state of lines no longer configured."""
        self._keep(lambda key: key[1] in names)

    def _keep(self, wanted) -> None:
        """Keep the state of the (track, line) keys `wanted` says yes to."""
        self._settled = {k: v for k, v in self._settled.items() if wanted(k)}
        self._pending = {k: v for k, v in self._pending.items() if wanted(k)}
