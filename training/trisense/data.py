"""Grounding annotations and the features they refer to.

Two annotation layouts load into one record type, `MomentRecord`:

* Moment-retrieval jsonl as in QVHighlights / Charades-STA / lighthouse:
  `{"qid", "query", "vid", "duration", "relevant_windows": [[s, e], ...]}` one object per line
  (extra keys such as `relevant_clip_ids`, `saliency_scores` or our `modality` are kept in `extra`).
* TriSense-2M JSON (a list of records), in either of its released forms:
  - `TriSense-2M-After-Judger.json`: `{"video", "times": [[s, e]], "original_avs", "original_av",
    "original_vs", "eval_result": {"AVS"|"AV"|"VS": {"caption", "score", "decision"}}, ...}`; each
    kept modality caption becomes one query over `times[0]` with its modality setting;
  - `stage2.json` / `stage3.json` conversations: `{"video", "conversations": [{"from","value"}...],
    "times": [[s, e] | [] per turn]}`; a grounding turn is a human turn without a time range in its
    text followed by a gpt turn with a non-empty time pair; the caption to ground is the quoted text
    of the human turn (or the turn without the `<video>` tag and instruction when nothing is quoted).

Features live in a directory of `<vid>.npz` files written by `ClipFeatures.save`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from models.trisense.features import ClipFeatures

TRISENSE_SETTINGS = {"AVS": ("visual", "audio", "speech"), "AV": ("visual", "audio"), "VS": ("visual", "speech")}


@dataclass
class MomentRecord:
    """One query with its ground-truth windows in one video."""

    qid: str
    query: str
    vid: str
    windows: list[tuple[float, float]]
    duration: float | None = None
    setting: str | None = None  # TriSense modality setting (AVS/AV/VS/V) when the source says so
    extra: dict = field(default_factory=dict)


def _windows(raw, where: str) -> list[tuple[float, float]]:
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"{where}: relevant windows must be a non-empty list of [start, end]")
    out = []
    for w in raw:
        if not isinstance(w, (list, tuple)) or len(w) != 2:
            raise ValueError(f"{where}: window {w!r} is not [start, end]")
        s, e = float(w[0]), float(w[1])
        if e < s or s < 0:
            raise ValueError(f"{where}: window {w!r} has end before start or negative time")
        out.append((s, e))
    return out


def load_moment_jsonl(path: str | Path) -> list[MomentRecord]:
    """Read a QVHighlights/Charades-STA-style jsonl file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no annotation file at {path}")
    records = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{where}: not JSON ({exc.msg})") from exc
            missing = [k for k in ("qid", "query", "vid", "relevant_windows") if k not in obj]
            if missing:
                raise ValueError(f"{where}: missing keys {missing}")
            extra = {k: v for k, v in obj.items() if k not in ("qid", "query", "vid", "duration", "relevant_windows")}
            records.append(
                MomentRecord(
                    qid=str(obj["qid"]),
                    query=str(obj["query"]),
                    vid=str(obj["vid"]),
                    windows=_windows(obj["relevant_windows"], where),
                    duration=float(obj["duration"]) if obj.get("duration") is not None else None,
                    setting=obj.get("setting"),
                    extra=extra,
                )
            )
    return records


def save_moment_jsonl(path: str | Path, records: list[MomentRecord]) -> None:
    """Write records in the moment-retrieval jsonl layout (extra keys kept)."""
    with Path(path).open("w", encoding="utf-8") as fh:
        for r in records:
            obj = {"qid": r.qid, "query": r.query, "vid": r.vid, "duration": r.duration,
                   "relevant_windows": [list(w) for w in r.windows]}
            if r.setting:
                obj["setting"] = r.setting
            obj.update(r.extra)
            fh.write(json.dumps(obj) + "\n")


_TIME_RANGE = re.compile(r"\[\s*\d+(?:\.\d+)?\s*,\s*\d+(?:\.\d+)?\s*\]")
_QUOTED = re.compile(r"[\"“'‘]([^\"”'’]{3,})[\"”'’]")


def _video_id(video: str) -> str:
    name = Path(str(video)).name
    return name[: -len(Path(name).suffix)] if Path(name).suffix else name


def _judger_records(i: int, rec: dict, durations: dict[str, float]) -> list[MomentRecord]:
    times = rec.get("times") or []
    if not times or not isinstance(times[0], list) or len(times[0]) != 2:
        return []
    vid = _video_id(rec["video"])
    window = _windows([times[0]], f"record {i}")
    judged = rec.get("eval_result") or {}
    out = []
    for setting, key in (("AVS", "original_avs"), ("AV", "original_av"), ("VS", "original_vs")):
        verdict = judged.get(setting) or {}
        if verdict.get("decision", "KEEP") != "KEEP":
            continue
        caption = verdict.get("caption") or rec.get(key)
        if not caption or not str(caption).strip():
            continue
        out.append(
            MomentRecord(f"{i}-{setting}", str(caption).strip(), vid, window, durations.get(vid), setting,
                         {"source": "trisense-judger"})
        )
    return out


def _conversation_records(i: int, rec: dict, durations: dict[str, float]) -> list[MomentRecord]:
    convs = rec.get("conversations") or []
    times = rec.get("times") or []
    vid = _video_id(rec["video"])
    out = []
    for k in range(len(convs) - 1):
        human, gpt = convs[k], convs[k + 1]
        if human.get("from") != "human" or gpt.get("from") != "gpt":
            continue
        span = times[k + 1] if k + 1 < len(times) else []
        text = str(human.get("value", ""))
        if not (isinstance(span, list) and len(span) == 2) or _TIME_RANGE.search(text):
            continue  # not a grounding turn (captioning turns name their range in the prompt)
        quoted = _QUOTED.findall(text)
        query = max(quoted, key=len) if quoted else text.replace("<video>", "").strip().splitlines()[-1]
        out.append(
            MomentRecord(f"{rec.get('id', i)}-{k}", query.strip(), vid, _windows([span], f"record {i} turn {k}"),
                         durations.get(vid), None, {"source": "trisense-conversation", "prompt": text})
        )
    return out


def load_trisense_json(path: str | Path, durations: dict[str, float] | None = None) -> list[MomentRecord]:
    """Read TriSense-2M records (After-Judger or stage2/3 conversation form) as grounding queries.

    TriSense-2M stores no durations; pass `durations` (vid -> seconds) or take them from the features.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no annotation file at {path}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON ({exc.msg})") from exc
    if not isinstance(data, list):
        raise ValueError(f"{path}: TriSense-2M files are a JSON list of records")
    durations = durations or {}
    out: list[MomentRecord] = []
    for i, rec in enumerate(data):
        if not isinstance(rec, dict) or "video" not in rec:
            raise ValueError(f"{path}: record {i} has no 'video'")
        if "conversations" in rec:
            out.extend(_conversation_records(i, rec, durations))
        else:
            out.extend(_judger_records(i, rec, durations))
    return out


def load_annotations(path: str | Path) -> list[MomentRecord]:
    """Pick the loader by layout: `.jsonl` -> moment retrieval, `.json` -> TriSense-2M."""
    path = Path(path)
    if path.suffix == ".jsonl":
        return load_moment_jsonl(path)
    if path.suffix == ".json":
        return load_trisense_json(path)
    raise ValueError(f"{path}: expected a .jsonl (moment retrieval) or .json (TriSense-2M) file")


class FeatureDir:
    """Lazy, cached access to `<root>/<vid>.npz` clip features."""

    def __init__(self, root: str | Path, cache: bool = True) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise FileNotFoundError(f"no feature directory at {self.root}")
        self._cache: dict[str, ClipFeatures] | None = {} if cache else None

    def __contains__(self, vid: str) -> bool:
        return (self.root / f"{vid}.npz").is_file()

    def __getitem__(self, vid: str) -> ClipFeatures:
        if self._cache is not None and vid in self._cache:
            return self._cache[vid]
        clip = ClipFeatures.load(self.root / f"{vid}.npz")
        if self._cache is not None:
            self._cache[vid] = clip
        return clip


def usable_records(records: list[MomentRecord], features: FeatureDir) -> tuple[list[MomentRecord], int]:
    """Records whose video has features; returns them and how many were skipped."""
    kept = [r for r in records if r.vid in features]
    return kept, len(records) - len(kept)
