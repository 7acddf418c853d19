"""Data for PreFM: the authors' release layouts (LLP, UnAV-100), UnAV-100's annotation JSON, our own
embedded corpus, and the window sampler of the official training code.

Layouts (``root`` is the dataset folder; split CSVs default to ``<root>/data_info/<split>_pd.csv``):

* LLP (``dataset/LLP``): ``data/CLAP/<id>.npy`` (CLAP maps, 6.4 rows/s, or 1-fps vectors),
  ``data/CLIP/<id>.npy`` (T x Dv), optional ``data/st/<id>.npy`` (T x 512), labels
  ``label/label/{audio,visual}/<id>.npy`` (T x 25), optional teachers
  ``label/feature_label/{audio,visual}/<id>.npy`` (T x 1536). CSV columns
  ``continual_event,video_num,filename,event_labels_1..6``; ``length = 10 * video_num``; concatenated
  streams are named by their comma-joined clip ids, exactly as the release names the files.
* UnAV-100 (``dataset/UnAV-100``): ``data/CLAP/<id>.npy``, ``data/CLIP/<id>.npy``, labels
  ``label/label_clip_clap/<split>/<id>.npy`` (T x 100) or UnAV's ``unav100_annotations.json``, optional
  teachers ``label/feature_label/<split>/<id>.npy``. CSV columns ``filename,length[,feature_length]``.
* Embedded (our corpus): ``embedded/audio/<id>.npy`` (T x Da) and ``embedded/visual/<id>.npy``
  (T x Dv), both 1 fps, plain float arrays (no pickles); labels and optional teachers as in LLP;
  CSV columns ``filename,length``.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.prefm.labels import LLP_CLASSES, unav_class_names
from models.prefm.online import clap_window, window_slice

LAYOUTS = ("llp", "unav", "embedded")


@dataclass
class Clip:
    """One video: features, per-second labels ("audio"/"visual" for AVVP, "av" for AVEL), teachers."""

    name: str
    audio: np.ndarray
    visual: np.ndarray
    st: np.ndarray | None
    labels: dict[str, np.ndarray]
    teacher: dict[str, np.ndarray] | None

    @property
    def length(self) -> int:
        return int(next(iter(self.labels.values())).shape[0])


def _load(path: Path) -> np.ndarray:
    if not path.is_file():
        raise FileNotFoundError(f"missing file: {path}")
    return np.asarray(np.load(path, allow_pickle=False), dtype=np.float32)


def read_split_csv(path: str | Path) -> list[tuple[str, int]]:
    """(name, length in seconds) rows of a PreFM split CSV (LLP: 10 * video_num; else ``length``)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"split CSV not found: {path}")
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        cols = reader.fieldnames or []
        if "filename" not in cols or not ({"video_num", "length"} & set(cols)):
            raise ValueError(f"{path}: expected columns filename and video_num or length, got {cols}")
        rows = []
        for row in reader:
            length = 10 * int(row["video_num"]) if "video_num" in cols else int(float(row["length"]))
            rows.append((row["filename"], length))
    if not rows:
        raise ValueError(f"{path}: no rows")
    return rows


def unav_labels_from_json(annotation_json: str | Path, subset: str | None = None) -> tuple[dict[str, np.ndarray], list[str]]:
    """UnAV-100 annotations -> per-second multi-hot (T x 100) per video, and the class names.

    Second ``t`` covers [t, t+1) and is positive for a class when its centre t + 0.5 lies inside one
    of that class's segments; T = ceil(duration). ``subset`` ("train", "validation", "test") filters.
    """
    names = unav_class_names(annotation_json)
    data = json.loads(Path(annotation_json).read_text())["database"]
    out: dict[str, np.ndarray] = {}
    for vid, entry in data.items():
        if subset is not None and entry.get("subset") != subset:
            continue
        seconds = max(1, math.ceil(float(entry["duration"]) - 1e-6))
        centres = np.arange(seconds) + 0.5
        y = np.zeros((seconds, len(names)), dtype=np.float32)
        for ann in entry.get("annotations", []):
            s, e = (float(x) for x in ann["segment"])
            y[(centres >= s) & (centres <= e), int(ann["label_id"])] = 1.0
        out[vid] = y
    return out, names


class ClipStore:
    """The clips of one split, loaded lazily (optionally kept in memory) from one of the layouts."""

    def __init__(self, layout: str, root: str | Path, split: str, csv_path: str | Path | None = None,
                 use_teacher: bool = True, annotation_json: str | Path | None = None, cache: bool = True) -> None:
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
        self.layout, self.root, self.split = layout, Path(root), split
        if not self.root.is_dir():
            raise FileNotFoundError(f"dataset folder not found: {self.root}")
        self.entries = read_split_csv(csv_path or self.root / "data_info" / f"{split}_pd.csv")
        self.cache = cache
        self._clips: dict[int, Clip] = {}
        self._json_labels: dict[str, np.ndarray] | None = None
        self.class_names: list[str] = list(LLP_CLASSES)
        if layout == "unav":
            self.class_names = [f"class_{i}" for i in range(100)]
            if annotation_json is not None:
                self._json_labels, self.class_names = unav_labels_from_json(annotation_json)
        self.task = "avel" if layout == "unav" else "avvp"
        teacher_root = self.root / "label" / "feature_label"
        self.use_teacher = use_teacher and teacher_root.is_dir()
        if layout == "embedded":
            self.audio_dir, self.visual_dir = self.root / "embedded" / "audio", self.root / "embedded" / "visual"
            self.st_dir = None
        else:
            self.audio_dir, self.visual_dir = self.root / "data" / "CLAP", self.root / "data" / "CLIP"
            st = self.root / "data" / "st"
            self.st_dir = st if layout == "llp" and st.is_dir() else None
        for d in (self.audio_dir, self.visual_dir):
            if not d.is_dir():
                raise FileNotFoundError(f"feature folder not found: {d}")

    def __len__(self) -> int:
        return len(self.entries)

    def _labels(self, name: str) -> dict[str, np.ndarray]:
        if self.task == "avvp":
            base = self.root / "label" / "label"
            return {m: _load(base / m / f"{name}.npy") for m in ("audio", "visual")}
        if self._json_labels is not None:
            if name not in self._json_labels:
                raise ValueError(f"video {name} is not in the annotation JSON")
            return {"av": self._json_labels[name]}
        return {"av": _load(self.root / "label" / "label_clip_clap" / self.split / f"{name}.npy")}

    def _teacher(self, name: str) -> dict[str, np.ndarray] | None:
        if not self.use_teacher:
            return None
        base = self.root / "label" / "feature_label"
        if self.task == "avvp":
            return {m: _load(base / m / f"{name}.npy") for m in ("audio", "visual")}
        return {"av": _load(base / self.split / f"{name}.npy")}

    def clip(self, i: int) -> Clip:
        if i in self._clips:
            return self._clips[i]
        name, csv_len = self.entries[i]
        labels = self._labels(name)
        length = min(min(y.shape[0] for y in labels.values()), csv_len)
        labels = {k: y[:length] for k, y in labels.items()}
        visual = _load(self.visual_dir / f"{name}.npy")
        audio = _load(self.audio_dir / f"{name}.npy")
        st = _load(self.st_dir / f"{name}.npy") if self.st_dir is not None else None
        if visual.shape[0] < length or (st is not None and st.shape[0] < length):
            raise ValueError(f"{name}: visual features cover {visual.shape[0]} s, labels {length} s")
        teacher = self._teacher(name)
        if teacher is not None:
            teacher = {k: t[:length] for k, t in teacher.items()}
            if min(t.shape[0] for t in teacher.values()) < length:
                raise ValueError(f"{name}: teacher features are shorter than the labels ({length} s)")
        clip = Clip(name=name, audio=audio, visual=visual[:length], st=None if st is None else st[:length],
                    labels=labels, teacher=teacher)
        if self.cache:
            self._clips[i] = clip
        return clip

    def audio_rate(self) -> str:
        """"1fps" when audio has one row per second, "clap_maps" when it has 6.4 rows per second."""
        c = self.clip(0)
        if c.audio.shape[0] == c.visual.shape[0]:
            return "1fps"
        if c.audio.shape[0] >= int(6.4 * c.length):
            return "clap_maps"
        raise ValueError(f"{c.name}: {c.audio.shape[0]} audio rows for {c.length} s is neither 1 fps nor CLAP maps")

    def dims(self) -> dict[str, int | None]:
        c = self.clip(0)
        return {"audio_dim": c.audio.shape[1], "visual_dim": c.visual.shape[1],
                "st_dim": None if c.st is None else c.st.shape[1],
                "teacher_dim": None if c.teacher is None else next(iter(c.teacher.values())).shape[1],
                "num_classes": next(iter(c.labels.values())).shape[1]}


# --------------------------------------------------------------------------------------------------
# Training samples
# --------------------------------------------------------------------------------------------------


def sample_current_indices(length: int, Lf: int, chunk: int, rng: np.random.Generator) -> list[int]:
    """One random current second per ``chunk``-second piece of the timeline, leaving Lf future seconds.

    As in the official sampler: chunks [0, 10), [10, 20), ... up to ``length - Lf``. (The official
    ``randint(start, end - 1)`` never draws the last index of a full chunk; we draw all valid ones.)
    """
    last_valid = length - Lf - 1
    out = []
    for start in range(0, last_valid + 1, chunk):
        out.append(int(rng.integers(start, min(start + chunk, last_valid + 1))))
    return out


def _stack_modalities(d: dict[str, np.ndarray], task: str) -> np.ndarray:
    return np.stack([d["audio"], d["visual"]], axis=1) if task == "avvp" else d["av"]


def window_sample(clip: Clip, t: int, Lc: int, Lf: int, audio_rate: str, task: str) -> dict[str, np.ndarray]:
    """The training sample whose current second is ``t``: zero-padded past windows, and labels (and
    teachers) for the Lc current positions followed by the Lf future seconds t+1 ... t+Lf."""
    audio = clap_window(clip.audio, t) if audio_rate == "clap_maps" else window_slice(clip.audio, t, Lc)
    sample = {"audio": audio, "visual": window_slice(clip.visual, t, Lc)}
    if clip.st is not None:
        sample["st"] = window_slice(clip.st, t, Lc)
    labels = _stack_modalities(clip.labels, task)
    sample["labels"] = np.concatenate([window_slice(labels.reshape(len(labels), -1), t, Lc).reshape(Lc, *labels.shape[1:]),
                                       labels[t + 1: t + 1 + Lf]], axis=0)
    if clip.teacher is not None:
        teach = _stack_modalities(clip.teacher, task)
        flat = teach.reshape(len(teach), -1)
        sample["teacher"] = np.concatenate([window_slice(flat, t, Lc).reshape(Lc, *teach.shape[1:]),
                                            teach[t + 1: t + 1 + Lf]], axis=0)
    return sample


def crop_sample(clip: Clip, start: int, seconds: int, audio_rate: str, task: str) -> dict[str, np.ndarray]:
    """A whole-clip (or cropped) sample for the offline model; CLAP crops start on 10-s blocks."""
    end = start + seconds
    if audio_rate == "clap_maps":
        if start % 10:
            raise ValueError("CLAP-map crops must start on a 10-s boundary")
        audio = clip.audio[int(start * 6.4): int(math.ceil(end / 10) * 64)]
    else:
        audio = clip.audio[start:end]
    sample = {"audio": audio, "visual": clip.visual[start:end],
              "labels": _stack_modalities(clip.labels, task)[start:end]}
    if clip.st is not None:
        sample["st"] = clip.st[start:end]
    if clip.teacher is not None:
        sample["teacher"] = _stack_modalities(clip.teacher, task)[start:end]
    return sample


def collate(samples: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Stack samples of equal shapes; CLAP audio of different row counts is zero-padded at the end."""
    out = {}
    for key in samples[0]:
        arrays = [s[key] for s in samples]
        rows = max(a.shape[0] for a in arrays)
        if any(a.shape[0] != rows for a in arrays):
            arrays = [np.concatenate([a, np.zeros((rows - a.shape[0], *a.shape[1:]), a.dtype)]) for a in arrays]
        out[key] = np.stack(arrays)
    return out
