"""Per-second multimodal features of one clip, the unit the grounder and the index consume.

Perception emits one vector per second per modality. Any modality may be absent for the whole clip
(no audio track, no ASR) or for some seconds (camera covered, silence), so every modality carries a
per-second availability mask next to its array.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

MODALITIES: tuple[str, str, str] = ("visual", "audio", "speech")


@dataclass
class ClipFeatures:
    """Per-second features of one clip; arrays are `[T, D]` float32, masks `[T]` bool, any may be None.

    `transcript` is a list of `{"start","end","text"}` segments (seconds from clip start) and `events`
    a list of detector labels `{"label","modality","start","end"}`; both feed the text-matching
    baseline and are stored by the index next to the vectors. `labels` holds every class the taggers named in
    each second, in the events' layout but one second long and unthresholded (AudioSet tags, COCO detections):
    the grounder's text-aligned evidence (`models.trisense.evidence`).
    """

    visual: np.ndarray | None = None
    audio: np.ndarray | None = None
    speech: np.ndarray | None = None
    visual_mask: np.ndarray | None = None
    audio_mask: np.ndarray | None = None
    speech_mask: np.ndarray | None = None
    transcript: list[dict] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)
    labels: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        lengths = set()
        for name in MODALITIES:
            arr = getattr(self, name)
            if arr is None:
                setattr(self, f"{name}_mask", None)
                continue
            arr = np.asarray(arr, dtype=np.float32)
            if arr.ndim != 2:
                raise ValueError(f"{name} features must be [T, D], got shape {arr.shape}")
            setattr(self, name, arr)
            lengths.add(arr.shape[0])
            mask = getattr(self, f"{name}_mask")
            if mask is None:
                mask = np.ones(arr.shape[0], dtype=bool)
            mask = np.asarray(mask, dtype=bool)
            if mask.shape != (arr.shape[0],):
                raise ValueError(f"{name}_mask must have shape ({arr.shape[0]},), got {mask.shape}")
            setattr(self, f"{name}_mask", mask)
        if len(lengths) > 1:
            raise ValueError(f"modalities disagree on the number of seconds: {sorted(lengths)}")
        if not lengths:
            raise ValueError("ClipFeatures needs at least one modality array")

    @property
    def num_seconds(self) -> int:
        """Number of 1-s steps in the clip."""
        for name in MODALITIES:
            arr = getattr(self, name)
            if arr is not None:
                return int(arr.shape[0])
        raise ValueError("ClipFeatures has no modality")

    def available(self) -> dict[str, bool]:
        """Whether each modality has at least one usable second."""
        return {
            name: getattr(self, name) is not None and bool(getattr(self, f"{name}_mask").any())
            for name in MODALITIES
        }

    def restricted(self, keep: tuple[str, ...] | list[str]) -> ClipFeatures:
        """A copy with only the modalities in `keep`; the others become missing (for modality settings)."""
        unknown = set(keep) - set(MODALITIES)
        if unknown:
            raise ValueError(f"unknown modalities: {sorted(unknown)}")
        kwargs: dict = {"transcript": self.transcript if "speech" in keep else [], "events": []}
        kwargs["events"] = [e for e in self.events if _event_kept(e, keep)]
        kwargs["labels"] = [e for e in self.labels if _event_kept(e, keep)]
        for name in MODALITIES:
            if name in keep:
                kwargs[name] = getattr(self, name)
                kwargs[f"{name}_mask"] = getattr(self, f"{name}_mask")
        if not any(kwargs.get(name) is not None for name in MODALITIES):
            raise ValueError(f"no modality left after restricting to {list(keep)}")
        return ClipFeatures(**kwargs)

    def window(self, start: int, end: int) -> ClipFeatures:
        """The seconds `[start, end)` as a new clip; transcript and events shifted to the window's time."""
        if not 0 <= start < end:
            raise ValueError(f"bad window [{start}, {end})")
        kwargs: dict = {}
        for name in MODALITIES:
            arr = getattr(self, name)
            if arr is not None:
                kwargs[name] = arr[start:end]
                kwargs[f"{name}_mask"] = getattr(self, f"{name}_mask")[start:end]
        kwargs["transcript"] = shift_items(self.transcript, start, end)
        kwargs["events"] = shift_items(self.events, start, end)
        kwargs["labels"] = shift_items(self.labels, start, end)
        return ClipFeatures(**kwargs)

    def save(self, path: str | Path) -> None:
        """Write the clip as one `.npz` (arrays, masks, transcript and events as JSON)."""
        arrays: dict[str, np.ndarray] = {}
        for name in MODALITIES:
            arr = getattr(self, name)
            if arr is not None:
                arrays[name] = arr
                arrays[f"{name}_mask"] = getattr(self, f"{name}_mask")
        arrays["transcript_json"] = np.array(json.dumps(self.transcript))
        arrays["events_json"] = np.array(json.dumps(self.events))
        if self.labels:
            arrays["labels_json"] = np.array(json.dumps(self.labels))
        np.savez_compressed(path, **arrays)

    @classmethod
    def load(cls, path: str | Path) -> ClipFeatures:
        """Read a clip written by `save`."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no feature file at {path}")
        with np.load(path, allow_pickle=False) as data:
            kwargs: dict = {}
            for name in MODALITIES:
                if name in data:
                    kwargs[name] = data[name]
                    kwargs[f"{name}_mask"] = data[f"{name}_mask"] if f"{name}_mask" in data else None
            kwargs["transcript"] = json.loads(str(data["transcript_json"])) if "transcript_json" in data else []
            kwargs["events"] = json.loads(str(data["events_json"])) if "events_json" in data else []
            kwargs["labels"] = json.loads(str(data["labels_json"])) if "labels_json" in data else []
        return cls(**kwargs)


def _event_kept(event: dict, keep: tuple[str, ...] | list[str]) -> bool:
    modality = event.get("modality", "visual")
    if modality == "audio-visual":
        return "audio" in keep and "visual" in keep
    return modality in keep


def shift_items(items: list[dict], start: int, end: int) -> list[dict]:
    """Timed items overlapping `[start, end)`, clipped to it and re-timed from `start`."""
    out = []
    for item in items:
        if item["end"] <= start or item["start"] >= end:
            continue
        shifted = dict(item)
        shifted["start"] = max(float(item["start"]), float(start)) - start
        shifted["end"] = min(float(item["end"]), float(end)) - start
        out.append(shifted)
    return out


def batch_arrays(
    clips: list[ClipFeatures], dims: dict[str, int], pad_to: int | None = None
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Pad clips into model inputs: `({m: [B,T,D_m]} float32, masks [B,3,T] bool, valid [B,T] bool)`.

    A missing modality becomes zeros with mask False. `dims` gives the model's input size per
    modality; a present array of another width is an error (features from a different encoder).
    """
    if not clips:
        raise ValueError("batch_features needs at least one clip")
    T = max(c.num_seconds for c in clips)
    if pad_to is not None:
        T = max(T, pad_to)
    B = len(clips)
    feats = {m: np.zeros((B, T, dims[m]), dtype=np.float32) for m in MODALITIES}
    masks = np.zeros((B, len(MODALITIES), T), dtype=bool)
    valid = np.zeros((B, T), dtype=bool)
    for b, clip in enumerate(clips):
        n = clip.num_seconds
        valid[b, :n] = True
        for k, m in enumerate(MODALITIES):
            arr = getattr(clip, m)
            if arr is None:
                continue
            if arr.shape[1] != dims[m]:
                raise ValueError(f"{m} features have width {arr.shape[1]}, the model expects {dims[m]}")
            feats[m][b, :n] = arr
            masks[b, k, :n] = getattr(clip, f"{m}_mask")
    return feats, masks, valid


def batch_features(
    clips: list[ClipFeatures], dims: dict[str, int], pad_to: int | None = None
) -> tuple[dict, object, object]:
    """`batch_arrays` as torch tensors (training and the torch model)."""
    import torch

    feats, masks, valid = batch_arrays(clips, dims, pad_to)
    return {m: torch.from_numpy(v) for m, v in feats.items()}, torch.from_numpy(masks), torch.from_numpy(valid)
