"""The tracking flags (`--track`, `--track-fps`, the tracker's knobs, `--zone`, `--line`, `--loiter-s`) into the
analysis options, checked once; kept apart from `settings.py` so each stays small."""

from __future__ import annotations

import math

from models.errors import BadInput


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
    for name in ("track_min_score", "track_moved"):
        value = getattr(args, name, None)
        if value is not None:
            if not 0 <= value <= 1:
                raise BadInput(f"--{name.replace('_', '-')} must be a number in [0, 1]")
            knobs[name] = value
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

    s = opts.stages
    opts.stages = replace(s, track=True, track_fps=track_fps or s.track_fps or 4.0, zones=tuple(zones),
                          lines=tuple(lines), loiter_s=loiter_s or s.loiter_s)
    opts.sample_fps = max(opts.sample_fps, opts.stages.track_fps)
    opts.grounding = replace(opts.grounding, zones=tuple(z.name for z in zones))  # watches may name a zone
