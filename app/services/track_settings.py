"""The tracking flags (`--track`, `--track-fps`, the tracker's knobs, `--zone`, `--line`, `--loiter-s`) into the
analysis options, checked once; kept apart from `settings.py` so each stays small."""

from __future__ import annotations

import math

from models.errors import BadInput

HITS = {"track_min_hits": "--track-min-hits", "track_line_hits": "--track-line-hits",
        "track_min_seen": "--track-min-seen"}  # whole numbers, 1-30
# numbers from 0 to this
RANGES = {"track_min_score": 1, "track_moved": 1, "track_confirm_score": 1, "track_nms": 1, "track_line_margin": 1,
          "track_relink_s": 30, "track_relink_reach": 10}


def add_tracking_flags(p) -> None:
    """The tracking flags of `foresight analyze` / `batch` / `serve` (and their TOML keys)."""
    p.add_argument("--track", action="store_true",
                   help="follow objects over time (ByteTrack over the detector's boxes): tracks, unique counts")
    p.add_argument("--track-fps", type=float, metavar="N",
                   help="detections a second the tracker gets (default 4; raises --fps to it); implies --track")
    p.add_argument("--track-min-score", type=float, metavar="S",
                   help="detections below this score never reach the tracker (default: chosen on val, docs/tracking.md)")
    p.add_argument("--track-moved", type=float, metavar="SHARE",
                   help="report a track once its box has moved this share of the picture (0: at once; default: "
                        "docs/tracking.md): static false positives never move")
    p.add_argument("--track-classes", metavar="A,B,...",
                   help="track only these COCO labels, or 'all' (default: people, vehicles and animals)")
    from pipelines.stages.config import TRACKERS

    p.add_argument("--tracker", choices=TRACKERS, help="which tracker of Roboflow's `trackers` (default bytetrack)")
    p.add_argument("--track-min-hits", type=int, metavar="N",
                   help="sightings in a row before ByteTrack gives a track an id (default 1; `trackers`' ByteTrack "
                        "gives none to a track's first box, so 1 and 2 both mean 2)")
    p.add_argument("--track-confirm-score", type=float, metavar="S",
                   help="report a track once one of its detections has scored S (default 0: off)")
    p.add_argument("--track-line-hits", type=int, metavar="N",
                   help="a line crossing counts once the track is seen N times in a row on the new side (default 2, "
                        "chosen on val and train: docs/tracking.md)")
    p.add_argument("--track-line-margin", type=float, metavar="SHARE",
                   help="a sighting this share of the picture beyond a line counts its crossing at once, whatever "
                        "--track-line-hits (default 0.05, chosen on val and train: docs/tracking.md; 0: off)")
    p.add_argument("--track-relink-s", type=float, metavar="SECONDS",
                   help="a new track that begins near where another was lost up to this long before continues its "
                        "id (default 1, chosen on val and train: docs/tracking.md; 0: off)")
    p.add_argument("--track-relink-reach", type=float, metavar="SIZES",
                   help="how near, in the lost box's sizes (default 1)")
    p.add_argument("--track-nms", type=float, metavar="IOU",
                   help="before the tracker, drop a box that overlaps a better one by this IoU whatever its label "
                        "(people apart; default 0.5, chosen on val; 1: off)")
    p.add_argument("--track-min-seen", type=int, metavar="N",
                   help="report a track once it has been seen N times, its boxes from before it got its id "
                        "included (default 4, chosen on val and train: no short ghosts)")
    p.add_argument("--track-still-people", action="store_true",
                   help="report a person standing still before it moves, as every other class is not (by default "
                        "only a person lying is: the safety cue; chosen on val and train, docs/tracking.md)")
    p.add_argument("--no-track-fill", action="store_true",
                   help="do not fill a track's path between two of its sightings (filled by default)")
    p.add_argument("--zone", action="append", metavar="NAME=x,y x,y x,y ...",
                   help="a polygon zone, corners normalised 0-1 (repeatable): zone_enter / zone_exit / loiter")
    p.add_argument("--line", action="append", metavar="NAME=x1,y1,x2,y2",
                   help="a counting line, ends normalised 0-1 (repeatable): crossings with their direction")
    p.add_argument("--loiter-s", type=float, default=30.0, help="seconds in a zone that make a loiter event (default 30)")


def tracking_options(args, opts) -> None:
    """--track, --track-fps, --zone, --line, --loiter-s into the stage config; tracking samples at least
    `track_fps` frames a second (the detector runs on each)."""
    from models.zones import parse_layout

    zones, lines = parse_layout(getattr(args, "zone", None), getattr(args, "line", None))
    track_fps = getattr(args, "track_fps", None)
    if track_fps is not None and not 1 <= track_fps <= 30:
        raise BadInput("--track-fps must be a number in [1, 30]")
    loiter = getattr(args, "loiter_s", 30.0)
    if loiter is not None and not 0 < loiter < math.inf:
        raise BadInput("--loiter-s must be a positive number of seconds")
    if not (getattr(args, "track", False) or track_fps or zones or lines):
        return
    if getattr(args, "no_visual", False):
        raise BadInput("tracking, zones and lines need the picture: drop --no-visual")
    enable_tracking(opts, zones, lines, track_fps, loiter or 30.0)
    knobs = {}
    for name, flag in HITS.items():
        value = getattr(args, name, None)
        if value is not None:
            if not 1 <= value <= 30:
                raise BadInput(f"{flag} must be a whole number in [1, 30]")
            knobs[name] = value
    if getattr(args, "no_track_fill", False):
        knobs["track_fill"] = False
    if getattr(args, "track_still_people", False):
        knobs["track_still_people"] = True
    for name, top in RANGES.items():
        value = getattr(args, name, None)
        if value is not None:
            if not 0 <= value <= top:
                raise BadInput(f"--{name.replace('_', '-')} must be a number in [0, {top:g}]")
            knobs[name] = value
    if getattr(args, "tracker", None):
        knobs["track_tracker"] = args.tracker
    classes = getattr(args, "track_classes", None)
    if classes == "all":
        knobs["track_classes"] = ()
    elif classes:
        from models.encoders.detector import coco_labels

        wanted = tuple(c.strip() for c in classes.split(",") if c.strip())
        unknown = sorted(set(wanted) - set(coco_labels()))
        if unknown or not wanted:
            raise BadInput(f"--track-classes: not COCO labels: {', '.join(unknown) or classes!r}")
        knobs["track_classes"] = wanted
    if knobs:
        from dataclasses import replace

        opts.stages = replace(opts.stages, **knobs)


def enable_tracking(opts, zones: tuple, lines: tuple, track_fps: float | None = None,
                    loiter_s: float | None = None) -> None:
    """Tracking on in `opts` with these zones and lines (CLI and `POST /v1/streams`): the detector runs on every
    sampled frame, and at least `track_fps` (default 4) frames a second are sampled."""
    from dataclasses import replace

    from pipelines.stages.config import DEFAULT_TRACK_FPS

    s = opts.stages
    opts.stages = replace(s, track=True, track_fps=track_fps or s.track_fps or DEFAULT_TRACK_FPS, zones=tuple(zones),
                          lines=tuple(lines), loiter_s=loiter_s or s.loiter_s)
    opts.sample_fps = max(opts.sample_fps, opts.stages.track_fps)
    opts.grounding = replace(opts.grounding, zones=tuple(z.name for z in zones))  # watches may name a zone
