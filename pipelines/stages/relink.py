"""A new track that begins near where a reported track was lost a moment ago continues that track's id.

ByteTrack keeps a lost track for its buffer and finds it again only where its motion model predicts the box. An
object hidden behind another as they pass, or one that turns back, comes out elsewhere and gets a new id: one
object, two tracks, and a line crossing made while it was hidden is never seen (its two tracks each stay on their
own side). When a track is first reported, `Relinker.id_of` looks for a reported track of the same kind (people
apart from everything else, as the detector's labels of animals and vehicles flicker) whose last sighting is at
most `within_s` earlier and whose box centre lies within `reach` of that box's size from the new box's centre; the
nearest one's id is taken (an appearance-free link, online: StrongSORT's AFLink does it offline). An id is taken
once; the old tracker id, should the tracker find it again, is reported under an id of its own.
"""

from __future__ import annotations

import itertools

FRESH_IDS = 1_000_000  # ids given to a tracker id whose reported id a newer track has taken
KEEP_S = 60.0  # lost tracks are remembered this long past `within_s` (a new track is reported a while after its
# first sighting, which is what it is linked by), then forgotten: a camera runs for days


class Relinker:
    """Tracker ids -> reported ids, for one stream."""

    def __init__(self, within_s: float, reach: float):
        self.within_s, self.reach = within_s, reach
        self._last: dict[int, tuple[float, list[float], bool]] = {}  # reported id -> (time, box, person?) last seen
        self._alias: dict[int, int] = {}  # tracker id -> reported id (absent: the same)
        self._owner: dict[int, int] = {}  # reported id -> the tracker id that reports it now
        self._decided: set[int] = set()  # tracker ids already linked or not
        self._fresh = itertools.count(FRESH_IDS)
        self._now = 0.0  # the latest sighting's time

    def reported(self, tid: int) -> int:
        """The id track `tid`'s sightings are reported under."""
        rid = self._alias.get(tid, tid)
        if self._owner.setdefault(rid, tid) != tid:  # a newer track took this id: the old one comes back apart
            rid = self._alias[tid] = next(self._fresh)
            self._owner[rid] = tid
        return rid

    def id_of(self, tid: int, t: float, box: list[float], label: str) -> int:
        """The id track `tid` is reported under; on its first report (its first sighting at `t`, `box`) a lost
        track's id when one qualifies, else its own."""
        if tid not in self._decided and self.within_s > 0:
            person = label == "person"
            cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
            best, nearest = None, float("inf")
            for rid in [r for r, (when, _, _) in self._last.items() if self._now - when > self.within_s + KEEP_S]:
                del self._last[rid]
            for rid, (when, old, was_person) in self._last.items():
                # lost: not seen since the new track's first sighting (a track seen beside it is another object)
                if was_person != person or not 0 < t - when <= self.within_s:
                    continue
                size = max(old[2] - old[0], old[3] - old[1])
                far = max(abs(cx - (old[0] + old[2]) / 2), abs(cy - (old[1] + old[3]) / 2))
                if far <= self.reach * size and far < nearest:
                    best, nearest = rid, far
            if best is not None:
                del self._last[best]
                self._alias[tid] = best
                self._owner[best] = tid
        self._decided.add(tid)
        return self.reported(tid)

    def seen(self, rid: int, t: float, box: list[float], label: str) -> None:
        """Reported track `rid` was seen at `t`."""
        self._last[rid] = (t, box, label == "person")
        self._now = max(self._now, t)

    def forget(self, tids: list[int]) -> None:
        """Tracker ids the tracker will not give again (lost for good)."""
        for tid in tids:
            self._decided.discard(tid)
            rid = self._alias.pop(tid, tid)
            if self._owner.get(rid) == tid:
                del self._owner[rid]
