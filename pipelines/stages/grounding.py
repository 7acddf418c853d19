"""Temporal grounding in the pipeline: per-second features are collected as the stream goes, one-off queries
(`foresight analyze --query`) are answered at the end, standing queries (`--watch`) are checked every few
seconds over the recent past and fire a moment once when they match. Both are held to the grounder's calibrated
abstention threshold: a query whose best moment scores below it is answered "not found" (an `answers` entry with
no moments), and a standing query does not fire.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from models.errors import BadInput
from models.watches import heard
from pipelines.stages.config import GroundingConfig
from pipelines.stages.record import Second


def checkpoint_path(checkpoint: str | None = None) -> Path:
    """The grounding checkpoint to use; BadInput naming the fix when it is missing."""
    from models.trisense import SHIPPED_CHECKPOINT

    path = Path(checkpoint) if checkpoint else SHIPPED_CHECKPOINT
    if not path.is_file():
        raise BadInput(f"no grounding model at {path}: build it with `foresight train grounding` "
                       "or pass --grounding-model PATH")
    return path


def load_grounder(checkpoint: str | None = None):
    """The grounder for `checkpoint`, loaded once per process (batch workers reuse it across files)."""
    return _grounder(str(checkpoint_path(checkpoint)))


@functools.lru_cache(maxsize=2)
def _grounder(path: str):
    from models.trisense.grounder import Grounder

    return Grounder.from_pretrained(path)


def _watch_specs(config: GroundingConfig) -> dict:
    """Each standing query read as a watch (its words, its own threshold); BadInput for a bad one."""
    from models.watches import parse_watch

    return {q: parse_watch(q) for q in config.standing}


class GroundingStage:
    def __init__(self, config: GroundingConfig):
        for q in config.queries:
            if not q.strip():
                raise BadInput("queries must not be empty")
        self.config = config
        self.watches = _watch_specs(config)
        self.grounder = load_grounder(config.checkpoint)
        self.audio: list[np.ndarray] = []
        self.visual: list[np.ndarray] = []
        self.audio_mask: list[bool] = []
        self.visual_mask: list[bool] = []
        self.transcript: list[dict] = []
        self.events: list[dict] = []
        self.labels: list[dict] = []  # every class the taggers named, per second (the grounder's evidence)
        self.fired: dict[str, list[tuple[float, float]]] = {q: [] for q in config.standing}
        self.t0: float | None = None
        self.base = 0  # the stream second the lists above start at (`_trim`)
        self._watch_zones(config)

    @property
    def keep_s(self) -> int | None:
        """Seconds kept: all of them for one-off queries and the search index (answered over everything at the
        end); else (a live stream's standing queries) the recent past the checks look at, so a camera that runs
        for days holds and stacks a bounded window, not about 3.5 kB more of features every second."""
        if self.config.queries or self.config.index_db:
            return None
        return self.config.lookback_s + self.config.check_every_s

    def reconfigure(self, config: GroundingConfig) -> None:
        """New standing queries for a running stream (the ingest sends the new config with every call): a query
        kept keeps what it has fired, a new one is checked from the next check on, over the same recent past."""
        self.watches = _watch_specs(config)
        self.fired = {q: self.fired.get(q, []) for q in config.standing}
        self.config = config
        self._watch_zones(config)

    def _watch_zones(self, config: GroundingConfig) -> None:
        """Split the standing queries: those naming a zone are zone watches (each fires once per track)."""
        from models.encoders.detector import coco_labels
        from models.zone_watch import zone_watch

        labels = tuple(coco_labels()) if config.zones else ()
        watches = {q: zone_watch(self.watches[q].query, config.zones, labels) for q in config.standing}
        self.zone_watches = {q: w for q, w in watches.items() if w is not None}
        old = getattr(self, "zone_fired", {})
        self.zone_fired = {q: old.get(q, set()) for q in self.zone_watches}

    def _append(self, record: Second, audio: dict, visual: dict) -> None:
        if self.t0 is None:
            self.t0 = float(record.start)
        index = int(round(record.start - self.t0))
        keep = self.keep_s
        if keep is not None and index - (self.base + len(self.audio)) > keep:  # a long outage: its end is enough
            self._drop(len(self.audio))
            self.base = index - keep
        while self.base + len(self.audio) < index:  # a live gap: missing seconds are unavailable, not silent
            self._push(None, None)
        self._push(audio.get("vector") if audio.get("available") else None,
                   visual.get("vector") if visual.get("available") else None)
        self._take_text(record)
        self._take_labels(record, index)
        self._trim()

    def _trim(self) -> None:
        """Drop the seconds before the last `keep_s` (and the lines, events and labels that ended before them)."""
        keep = self.keep_s
        if keep is None or len(self.audio) <= keep:
            return
        self._drop(len(self.audio) - keep)
        self.transcript = [t for t in self.transcript if t["end"] > self.base]
        self.events = [e for e in self.events if e["end"] > self.base]
        self.labels = [x for x in self.labels if x["end"] > self.base]

    def _drop(self, n: int) -> None:
        """Drop the oldest `n` seconds of features."""
        for kept in (self.audio, self.visual, self.audio_mask, self.visual_mask):
            del kept[:n]
        self.base += n

    def _take_labels(self, record: Second, index: int) -> None:
        from models.trisense.evidence import second_labels

        self.labels.extend(second_labels(float(index), record.tags, record.visual, record.text))

    def _take_text(self, record: Second) -> None:
        """Keep the transcript and closed events of `record`, on the clock of this stream's first second."""
        self.transcript.extend(_shifted({"start": t["start"], "end": t["end"], "text": t["text"],
                                         **({"words": t["words"]} if t.get("words") else {})}, self.t0)
                               for t in record.transcript)
        self.events.extend({**e, "start": e["start"] - self.t0, "end": e["end"] - self.t0}
                           for e in record.events_closed)

    def _push(self, audio_vec, visual_vec) -> None:
        dims = self.grounder.dims
        self.audio.append(np.zeros(dims["audio"], np.float32) if audio_vec is None else np.asarray(audio_vec))
        self.visual.append(np.zeros(dims["visual"], np.float32) if visual_vec is None else np.asarray(visual_vec))
        self.audio_mask.append(audio_vec is not None)
        self.visual_mask.append(visual_vec is not None)

    def features(self):
        from models.trisense.features import ClipFeatures
        from models.trisense.text import speech_features

        n, base = len(self.audio), self.base
        transcript = [_shifted(t, base) for t in self.transcript]
        speech, speech_mask = speech_features(transcript, n, encoder=self.grounder.text_encoder)
        return ClipFeatures(visual=np.stack(self.visual), audio=np.stack(self.audio), speech=speech,
                            visual_mask=np.array(self.visual_mask), audio_mask=np.array(self.audio_mask),
                            speech_mask=speech_mask, transcript=transcript,
                            events=[_shifted(e, base) for e in self.events],
                            labels=[_shifted(x, base) for x in self.labels])

    @property
    def fire_threshold(self) -> float:
        """The standing queries' threshold: the configured one, else the grounder's calibrated one."""
        if self.config.fire_threshold is not None:
            return float(self.config.fire_threshold)
        return self.grounder.threshold if self.grounder.threshold is not None else 0.5

    def _answer(self, query: str, offset: int = 0, clip=None, abstain: bool = True) -> dict:
        """The grounder's answer on the stream's clock: `{"query","found","best_score","threshold","moments"}`."""
        clip = clip if clip is not None else self.features()
        answer = self.grounder.answer(query, clip, top_k=self.config.top_k, abstain=abstain).to_dict()
        for d in answer["moments"]:
            d["start"] = round(d["start"] + offset + (self.t0 or 0.0), 3)
            d["end"] = round(d["end"] + offset + (self.t0 or 0.0), 3)
        return answer

    def _moments(self, query: str, offset: int = 0, clip=None) -> list[dict]:
        return self._answer(query, offset, clip, abstain=False)["moments"]

    def process(self, record: Second, audio: dict, visual: dict) -> Second:
        """Add one second; every `check_every_s` seconds, check the standing queries over the recent past."""
        if record.index is None:
            return record
        self._append(record, audio, visual)
        n = self.base + len(self.audio)  # seconds seen
        fired = self._zone_moments(record)
        grounded = [q for q in self.config.standing if q not in self.zone_watches]
        if grounded and n % self.config.check_every_s == 0:
            lo = max(0, n - self.config.lookback_s)
            clip = self.features().window(lo - self.base, n - self.base)
            for text in grounded:
                watch = self.watches[text]
                threshold = watch.threshold if watch.threshold is not None else self.fire_threshold
                for m in self._moments(watch.query, offset=lo, clip=clip)[:1]:
                    # a sound watch needs audio evidence: words that name the sound are not the sound
                    if m["score"] >= threshold and (not watch.sound or heard(m)) and not self._seen(text, m):
                        self.fired[text].append((m["start"], m["end"]))
                        fired.append({**m, "standing": True, "fired_at": record.end, "watch": text,
                                      "threshold": round(float(threshold), 4)})
        record.moments = record.moments + fired
        return record

    def _zone_moments(self, record: Second) -> list[dict]:
        """The zone watches this second's zone events fire (once per watch and track)."""
        from models.zone_watch import zone_moment

        out = []
        for query, watch in self.zone_watches.items():
            for event in record.zone_events:
                if watch.matches(event) and event.get("track_id") not in self.zone_fired[query]:
                    self.zone_fired[query].add(event.get("track_id"))
                    out.append(zone_moment(watch, event, record.end))
        return out

    def _seen(self, query: str, m: dict) -> bool:
        return any(min(e, m["end"]) - max(s, m["start"]) > 0 for s, e in self.fired[query])

    def finish(self, record: Second) -> Second:
        """End of stream: answer the one-off queries over everything seen."""
        if self.t0 is not None:
            self._take_text(record)
        if not self.audio or not (self.config.queries or self.config.index_db):
            return record
        clip = self.features()
        if self.config.index_db:
            self.index(clip)
        answers = [self._answer(q, clip=clip) for q in self.config.queries]
        record.moments = record.moments + [m for a in answers for m in a["moments"]]
        record.answers = record.answers + [{k: v for k, v in a.items() if k != "moments"} for a in answers]
        return record

    def index(self, clip) -> None:
        """Store this source's features so `POST /v1/search` can ground queries over everything stored."""
        from pipelines.sinks.grounding_index import GroundingIndex

        index = GroundingIndex(self.config.index_db, self.grounder)
        try:
            index.add(self.config.index_source or "source", clip)
        finally:
            index.close()


def _shifted(item: dict, by: float) -> dict:
    """A timed item (a transcript line with its words, an event, a label) moved `by` seconds earlier."""
    out = {**item, "start": item["start"] - by, "end": item["end"] - by}
    if item.get("words"):
        out["words"] = [{**w, "start": w["start"] - by, "end": w["end"] - by} for w in item["words"]]
    return out
