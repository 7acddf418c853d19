"""The review feed: what in a stream deserves a person's look becomes a card (like Frigate's review items).

A card is one of:

- `alert`: every safety alert (`record.alerts`), keyed by its rule;
- `watch`: every standing query that fired (`record.moments` with `"standing": True`), keyed by the query;
- `crossing`: every line crossing, keyed by line, label and direction;
- `loiter`: every zone loiter (an object that stayed in a zone; entering or leaving alone is no card), keyed by
  zone and label;
- `event`: an *event of note*: a closed event whose label (or readable name) is one of `NOTABLE_LABELS`, the
  sounds that mean trouble (alarms, sirens, breaking glass, screams, crying, gunshots, explosions, fire), with
  confidence at least `NOTABLE_MIN_CONFIDENCE`. Other events (speech, music, a dog, a car) stay on the
  timeline only: a card for each would bury the ones that matter.

A card's time is stream time (what playback seeks to), its wall time the wall clock of the second it came
from. A repeated firing of the same thing (same job, kind and key) within `COOLDOWN_S` of stream time of the
card's last firing merges into that card (count + 1, last time) instead of making a new one (`merges`); a
card already marked reviewed takes no more firings: the next one starts a new card, so nothing new hides
behind a card someone has dismissed. The thumbnail is the second's analysed picture (or the last one seen),
320 px wide.

All of this is pure code; `ReviewWriter` feeds it from the sink into a store's `add_or_merge_card`.
"""

from __future__ import annotations

import io
import time
from dataclasses import dataclass
from typing import Protocol

from pipelines.stages.record import Second

KINDS = ("alert", "watch", "crossing", "loiter", "event")
COOLDOWN_S = 60.0
THUMB_WIDTH = 320
NOTABLE_MIN_CONFIDENCE = 0.3
# AudioSet display names (the tag events' labels) and the LLP classes' readable names (PreFM's events)
NOTABLE_LABELS = frozenset({
    "Alarm", "Fire alarm", "Smoke detector, smoke alarm", "Car alarm", "Siren", "Civil defense siren",
    "Police car (siren)", "Ambulance (siren)", "Fire engine, fire truck (siren)", "Glass", "Shatter",
    "Breaking", "Smash, crash", "Screaming", "Crying, sobbing", "Baby cry, infant cry", "Gunshot, gunfire",
    "Machine gun", "Explosion", "Fire", "Fire_alarm", "Baby_cry_infant_cry",
})


@dataclass
class Card:
    """One review item; `id` is set by the store once the card is kept."""

    job_id: str
    source: str
    kind: str
    key: str  # what "the same thing" is for the cool-down merge (rule, query, line|label|direction, ...)
    title: str  # what fired
    why: str  # why it fired
    time: float  # stream time of its first firing, seconds
    wall_time: float  # wall clock of its first firing
    severity: str | None = None
    last_time: float | None = None
    last_wall: float | None = None
    count: int = 1
    thumbnail: bytes | None = None
    id: int | None = None

    def __post_init__(self) -> None:
        self.last_time = self.time if self.last_time is None else self.last_time
        self.last_wall = self.wall_time if self.last_wall is None else self.last_wall


def notable(event: dict) -> bool:
    """Whether a closed event is an event of note (see the module's rule)."""
    names = {str(event.get("label", "")), str(event.get("name", ""))}
    return bool(names & NOTABLE_LABELS) and float(event.get("confidence", 0.0)) >= NOTABLE_MIN_CONFIDENCE


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60:02d}:{seconds % 60:02d}"


def _watch(m: dict) -> tuple[str, str]:
    if m.get("method") == "zone":
        return str(m["query"]), f"{m.get('label') or 'object'} #{m.get('track_id')} in {m.get('zone')}"
    return str(m["query"]), (f"the last seconds matched it at {_clock(m['start'])}-{_clock(m['end'])} "
                             f"(score {float(m.get('score', 0.0)):.2f})")


def cards_of(record: Second, job_id: str, source: str, wall: float | None = None) -> list[Card]:
    """The cards one second raises, without thumbnails, in the order they happened."""
    wall = record.emitted_wall or (time.time() if wall is None else wall)
    out = [Card(job_id, source, "alert", str(a["rule"]), str(a["rule"]), str(a.get("reason", "")),
                float(a["time"]), wall, severity=a.get("severity")) for a in record.alerts]
    for m in record.moments:
        if m.get("standing"):
            title, why = _watch(m)
            out.append(Card(job_id, source, "watch", title, title, why, float(m["start"]), wall))
    for c in record.crossings:
        direction = str(c["direction"]).replace("_", " ")
        out.append(Card(job_id, source, "crossing", f"{c['line']}|{c['label']}|{c['direction']}",
                        f"{c['label']} crossed {c['line']}", f"#{c['track_id']} went {direction}",
                        float(c["time"]), wall))
    for z in record.zone_events:
        if z.get("kind") == "loiter":
            out.append(Card(job_id, source, "loiter", f"{z['zone']}|{z['label']}",
                            f"{z['label']} loitering in {z['zone']}",
                            f"#{z['track_id']} stayed {float(z.get('dwell_s') or 0.0):.0f} s", float(z["time"]), wall))
    for e in record.events_closed:
        if notable(e):
            name = str(e.get("name") or e["label"])
            out.append(Card(job_id, source, "event", str(e["label"]), name,
                            f"{e.get('modality', '?')} event {_clock(e['start'])}-{_clock(e['end'])}, confidence "
                            f"{float(e['confidence']):.2f} (a notable sound)", float(e["start"]), wall))
    return sorted(out, key=lambda c: c.time)


def merges(previous: dict | Card | None, card: Card, cooldown_s: float = COOLDOWN_S) -> bool:
    """Whether `card` is a repeat of `previous` (the latest card of the same job, kind and key): not reviewed,
    and within the cool-down of its last firing (either way: a live clock may step back on a reconnect)."""
    if previous is None:
        return False
    get = previous.get if isinstance(previous, dict) else lambda k: getattr(previous, k, None)
    if get("reviewed"):
        return False
    return (get("job_id"), get("kind"), get("key")) == (card.job_id, card.kind, card.key) and \
        abs(card.time - float(get("last_time"))) <= cooldown_s


def thumbnail(jpeg: bytes | None, width: int = THUMB_WIDTH) -> bytes | None:
    """`jpeg` scaled down to `width` pixels wide (never up), as a JPEG; None for no picture or one PIL cannot
    read (a card is still made without it)."""
    if not jpeg:
        return None
    from PIL import Image, UnidentifiedImageError

    try:
        im = Image.open(io.BytesIO(jpeg))
        im = im.convert("RGB")
    except (UnidentifiedImageError, OSError):
        return None
    if im.width > width:
        im = im.resize((width, max(1, round(im.height * width / im.width))), Image.LANCZOS)
    out = io.BytesIO()
    im.save(out, format="JPEG", quality=80)
    return out.getvalue()


class CardStore(Protocol):
    """Where the writer puts cards: the store (`review_store.ReviewCards`), named here by what it does."""

    def add_or_merge_card(self, card: Card, cooldown_s: float = COOLDOWN_S) -> object: ...


class ReviewWriter:
    """The sink's side of the feed: each second's cards, with the thumbnail of the latest picture (the
    second's own, or the last one seen: the sink's `picture`), into `store.add_or_merge_card`."""

    def __init__(self, store: CardStore, job_id: str, source: str, cooldown_s: float = COOLDOWN_S):
        self.store, self.job_id, self.source, self.cooldown_s = store, job_id, source, cooldown_s

    def write(self, record: Second, picture: bytes | None = None) -> list[Card]:
        """Add or merge the cards of `record` (thumbnails from the JPEG `picture`); returns them (with ids)."""
        cards = cards_of(record, self.job_id, self.source)
        if cards:
            thumb = thumbnail(picture)
            for card in cards:
                card.thumbnail = thumb
                self.store.add_or_merge_card(card, self.cooldown_s)
        return cards
