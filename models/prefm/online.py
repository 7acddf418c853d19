"""Running a trained PreFM: live ring buffer, batch window-per-second, offline, events, checkpoints.

Online protocol (as in the authors' evaluation): at second ``t`` the model reads the zero-padded
window of seconds ``t-Lc+1 ... t`` and the prediction for ``t`` is the newest window position. No
future input is ever read, so the only latency is the 1-s segment plus compute. The future head's
probabilities for ``t+1 ... t+Lf`` are returned as the model's anticipation.

The network runs through a runner (`models/prefm/runtime.py`): ONNX Runtime for a checkpoint loaded with
`OnlineParser.from_pretrained` / `runtime.load_inference` (torch is imported only to export it the first time
on a machine, or with `FORESIGHT_PREFM=torch`), torch for a `PreFM` module passed in (training, evaluation).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from models import checkpoints
from models.events import Event, EventTracker
from models.prefm.config import CHECKPOINT_FORMAT, PreFMConfig
from models.prefm.runtime import as_runner, load_inference

if TYPE_CHECKING:
    from models.prefm.modeling_prefm import PreFM
    from models.prefm.runtime import OnnxPreFM, TorchPreFM

MODALITY_NAMES = {"audio": "audio", "visual": "visual", "av": "audio-visual"}


# --------------------------------------------------------------------------------------------------
# Window bookkeeping shared by the live and batch paths
# --------------------------------------------------------------------------------------------------


def clap_frame_bounds(second: int) -> tuple[int, int]:
    """Rows of a CLAP map (6.4 rows/s) that belong to second ``second``: [int(6.4 t), int(6.4 (t+1)))."""
    return int(second * 6.4), int((second + 1) * 6.4)


def window_slice(array: np.ndarray, t: int, length: int) -> np.ndarray:
    """Rows ``t-length+1 ... t`` of ``array``, zero-padded at the start (the authors' padding)."""
    lo = t + 1 - length
    part = array[max(lo, 0): t + 1]
    if lo < 0:
        part = np.concatenate([np.zeros((-lo, array.shape[1]), dtype=array.dtype), part], axis=0)
    return part


def clap_window(array: np.ndarray, t: int) -> np.ndarray:
    """The 64 CLAP rows ending with second ``t``, zero-padded at the start."""
    end = clap_frame_bounds(t)[1]
    return window_slice(array, end - 1, 64)


def _num_seconds(config: PreFMConfig, audio: np.ndarray, visual: np.ndarray) -> int:
    seconds = visual.shape[0]
    if config.audio_rate == "1fps" and audio.shape[0] != seconds:
        raise ValueError(f"audio has {audio.shape[0]} seconds but visual has {seconds}")
    if config.audio_rate == "clap_maps" and audio.shape[0] < clap_frame_bounds(seconds - 1)[1]:
        raise ValueError(f"{seconds} s need {clap_frame_bounds(seconds - 1)[1]} CLAP rows, got {audio.shape[0]}")
    return seconds


def _as_float(x: Any) -> np.ndarray | None:
    """A float32 array from an array or a torch tensor (told apart without importing torch)."""
    if x is None:
        return None
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=np.float32)


def load_checkpoint(path: str | Path, map_location: str = "cpu") -> tuple[PreFM, PreFMConfig, dict[str, Any]]:
    """`modeling_prefm.load_checkpoint` (torch model, config, metadata), beside `save_checkpoint` as callers expect."""
    from models.prefm.modeling_prefm import load_checkpoint as load

    return load(path, map_location)


# --------------------------------------------------------------------------------------------------
# Batch: one window per second over a whole clip (evaluation protocol)
# --------------------------------------------------------------------------------------------------


def predict_windows(model: PreFM | OnnxPreFM | TorchPreFM, audio: np.ndarray, visual: np.ndarray, st: np.ndarray | None = None,
                    batch_size: int = 64) -> dict[str, np.ndarray]:
    """Per-second probabilities of a clip, each second predicted from its own past window only.

    Returns "audio", "visual", "av" (AVVP) or "av" (AVEL) as (T, C) arrays and, with future modeling,
    "future_<m>" arrays of shape (T, Lf, C): at second t, the anticipated probabilities for t+1...t+Lf.
    """
    runner = as_runner(model)
    cfg = runner.config
    audio, visual, st = _as_float(audio), _as_float(visual), _as_float(st)
    seconds = _num_seconds(cfg, audio, visual)
    chunks: dict[str, list[np.ndarray]] = {}
    for lo in range(0, seconds, batch_size):
        ts = range(lo, min(lo + batch_size, seconds))
        if cfg.audio_rate == "clap_maps":
            a = np.stack([clap_window(audio, t) for t in ts])
        else:
            a = np.stack([window_slice(audio, t, cfg.Lc) for t in ts])
        v = np.stack([window_slice(visual, t, cfg.Lc) for t in ts])
        s = np.stack([window_slice(st, t, cfg.Lc) for t in ts]) if st is not None else None
        current, future = runner.window_probabilities(a, v, s)
        for k, x in current.items():
            chunks.setdefault(k, []).append(x)
        for k, x in future.items():
            chunks.setdefault(f"future_{k}", []).append(x)
    return {k: np.concatenate(v, axis=0) for k, v in chunks.items()}


def predict_offline(model: PreFM, audio: np.ndarray, visual: np.ndarray, st: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Offline baseline: the network reads the whole clip at once (bidirectional attention over all
    seconds) and every position is classified. Needs a model without future modeling. CLAP maps are
    pooled per 10-s block (64 rows -> 10 steps) since the pooling is defined on 10-s windows. Torch only."""
    import torch

    from models.prefm.modeling_prefm import probabilities

    cfg = model.config
    if cfg.use_future:
        raise ValueError("offline prediction needs a model built with use_future=False")
    audio, visual, st = _as_float(audio), _as_float(visual), _as_float(st)
    seconds = _num_seconds(cfg, audio, visual)
    model.eval()
    device = next(model.parameters()).device
    with torch.no_grad():
        a = model.embed_audio_clip(torch.from_numpy(audio).to(device)[None], seconds)
        v = torch.from_numpy(visual).to(device)[None]
        s = torch.from_numpy(st).to(device)[None] if st is not None else None
        out = model.forward_tokens(a, model.embed_visual(v, s))
    return {k: x[0].cpu().numpy() for k, x in probabilities(out.logits, cfg.task).items()}


# --------------------------------------------------------------------------------------------------
# Events: merging binarized seconds, causally
# --------------------------------------------------------------------------------------------------


class EventMerger:
    """Turns per-second binarized outputs into events ``{"label","modality","start","end","confidence"}``.

    It binarizes and hands each second's (class, modality) labels to the project's one event merger
    (`models/events.py:EventTracker`), so PreFM's events get the same gap filling (``max_gap`` missing
    seconds bridged) and shortest-event rule (``min_duration``) as the tag events. Causal: an event is
    emitted once its class has been off for more than ``max_gap`` seconds (or at ``flush``), so no decision
    waits for more than that. ``exclusive=True`` (default) gives each class-second one modality:
    "audio-visual" when heard and seen, else "audio" or "visual"; ``exclusive=False`` emits the three AVVP
    streams (audio, visual, and their AND) independently, as the metrics score them, so a heard event is one
    audio event however often the picture comes and goes. Confidence is the mean probability over the
    event's seconds (sqrt(p_a p_v) for audio-visual). The defaults (no gap, no shortest event) merge runs of
    positive seconds exactly, as the evaluation protocol does.
    """

    def __init__(self, class_names: list[str], threshold: float = 0.5, exclusive: bool = True,
                 max_gap: int = 0, min_duration: float = 0.0) -> None:
        self.class_names = list(class_names)
        self.threshold = threshold
        self.exclusive = exclusive
        self.max_gap, self.min_duration = max_gap, min_duration
        self.reset()

    def reset(self) -> None:
        """Forget open events (a new stream)."""
        self._tracker = EventTracker(self.max_gap, self.min_duration)

    def _active(self, probs: dict[str, np.ndarray]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        if "audio" not in probs:  # AVEL: one audio-visual head
            return {"av": (probs["av"] >= self.threshold, probs["av"])}
        on_a, on_v = probs["audio"] >= self.threshold, probs["visual"] >= self.threshold
        both = on_a & on_v
        if self.exclusive:
            return {"av": (both, probs["av"]), "audio": (on_a & ~both, probs["audio"]),
                    "visual": (on_v & ~both, probs["visual"])}
        return {"av": (both, probs["av"]), "audio": (on_a, probs["audio"]), "visual": (on_v, probs["visual"])}

    def update(self, t: int, probs: dict[str, np.ndarray]) -> list[dict[str, Any]]:
        """Feed second ``t`` (probabilities of shape (C,)); returns the events that closed with it."""
        labels = {(self.class_names[c], MODALITY_NAMES[mod]): float(score[c])
                  for mod, (on, score) in self._active(probs).items() for c in np.flatnonzero(on)}
        return _sorted(self._tracker.update(float(t), float(t + 1), labels))

    def flush(self) -> list[dict[str, Any]]:
        """Close every open event (end of stream)."""
        return _sorted(self._tracker.finish())

    def open_events(self) -> list[dict[str, Any]]:
        """Events still running, with ``end`` the end of the last positive second (for live display)."""
        return [_as_dict(ev) for ev in self._tracker.open.values()]


def _as_dict(ev: Event) -> dict[str, Any]:
    return {"label": ev.label, "modality": ev.modality, "start": float(ev.start), "end": float(ev.end),
            "confidence": round(ev.confidence, 4)}


def _sorted(events: list[Event]) -> list[dict[str, Any]]:
    return sorted((_as_dict(ev) for ev in events), key=lambda e: (e["start"], e["label"]))


def merge_events(probs: dict[str, np.ndarray], class_names: list[str], threshold: float = 0.5,
                 exclusive: bool = True) -> list[dict[str, Any]]:
    """Events of a whole clip from (T, C) probabilities, with the same causal merger as live use."""
    merger = EventMerger(class_names, threshold, exclusive)
    seconds = next(iter(probs.values())).shape[0]
    events: list[dict[str, Any]] = []
    for t in range(seconds):
        events += merger.update(t, {k: v[t] for k, v in probs.items() if not k.startswith("future_")})
    return sorted(events + merger.flush(), key=lambda e: (e["start"], e["label"], e["modality"]))


# --------------------------------------------------------------------------------------------------
# Live: a ring buffer of the last Lc seconds
# --------------------------------------------------------------------------------------------------


@dataclass
class StepResult:
    """Output for one second: probabilities (C,) per modality, anticipation (Lf, C), finished events."""

    time: int
    audio: np.ndarray | None
    visual: np.ndarray | None
    av: np.ndarray
    future: dict[str, np.ndarray]
    events: list[dict[str, Any]]


class OnlineParser:
    """Live PreFM: keeps the last ``Lc`` seconds (or 64 CLAP rows), runs the model once per second.

    ``model`` is a runner (`runtime.load_inference`) or a torch `PreFM`; ``self.model`` is its runner."""

    def __init__(self, model: PreFM | OnnxPreFM | TorchPreFM, threshold: float = 0.5, exclusive: bool = True, max_gap: int = 0,
                 min_duration: float = 0.0) -> None:
        self.model = as_runner(model).eval()
        self.config = self.model.config
        names = self.config.class_names or [f"class_{i}" for i in range(self.config.num_classes)]
        self.merger = EventMerger(names, threshold, exclusive, max_gap, min_duration)
        self.reset()

    @classmethod
    def from_pretrained(cls, path: str | Path | None = None, threshold: float = 0.5,
                        exclusive: bool = True) -> OnlineParser:
        """Live PreFM from the checkpoint in `path`, by default the shipped one (ONNX Runtime unless
        `FORESIGHT_PREFM=torch`)."""
        return cls(load_inference(path), threshold=threshold, exclusive=exclusive)

    def reset(self) -> None:
        c = self.config
        rows = 64 if c.audio_rate == "clap_maps" else c.Lc
        self._audio: deque[np.ndarray] = deque([np.zeros(c.audio_dim, np.float32)] * rows, maxlen=rows)
        self._visual: deque[np.ndarray] = deque([np.zeros(c.visual_dim, np.float32)] * c.Lc, maxlen=c.Lc)
        self._st: deque[np.ndarray] | None = None
        if c.st_dim is not None:
            self._st = deque([np.zeros(c.st_dim, np.float32)] * c.Lc, maxlen=c.Lc)
        self.merger.reset()
        self.t = 0

    def step(self, audio_feat: np.ndarray, visual_feat: np.ndarray, st_feat: np.ndarray | None = None) -> StepResult:
        """Push one second. 1 fps: ``audio_feat`` (Da,); CLAP maps: the rows of this second, (k, Da)
        with k = int(6.4 (t+1)) - int(6.4 t). ``visual_feat`` (Dv,), ``st_feat`` (Dst,) when used."""
        c = self.config
        audio_feat, visual_feat = _as_float(audio_feat), _as_float(visual_feat)
        if c.audio_rate == "clap_maps":
            lo, hi = clap_frame_bounds(self.t)
            if audio_feat.ndim != 2 or audio_feat.shape != (hi - lo, c.audio_dim):
                raise ValueError(f"second {self.t} needs CLAP rows of shape {(hi - lo, c.audio_dim)}, got {audio_feat.shape}")
            self._audio.extend(audio_feat)
        else:
            if audio_feat.shape != (c.audio_dim,):
                raise ValueError(f"audio feature must have shape ({c.audio_dim},), got {audio_feat.shape}")
            self._audio.append(audio_feat)
        if visual_feat.shape != (c.visual_dim,):
            raise ValueError(f"visual feature must have shape ({c.visual_dim},), got {visual_feat.shape}")
        self._visual.append(visual_feat)
        st = None
        if self._st is not None:
            st_feat = _as_float(st_feat)
            if st_feat is None or st_feat.shape != (c.st_dim,):
                raise ValueError(f"this model needs an st feature of shape ({c.st_dim},)")
            self._st.append(st_feat)
            st = np.stack(self._st)[None]
        current, future = self.model.window_probabilities(np.stack(self._audio)[None], np.stack(self._visual)[None], st)
        current = {k: v[0] for k, v in current.items()}
        events = self.merger.update(self.t, current)
        result = StepResult(time=self.t, audio=current.get("audio"), visual=current.get("visual"), av=current["av"],
                            future={k: v[0] for k, v in future.items()}, events=events)
        self.t += 1
        return result

    def finish(self) -> list[dict[str, Any]]:
        """End of stream: close the events still open."""
        return self.merger.flush()


# --------------------------------------------------------------------------------------------------
# Checkpoints: one .pt file, state dict + config dict + metadata (read by modeling_prefm.load_checkpoint)
# --------------------------------------------------------------------------------------------------


def save_checkpoint(path: str | Path, model: PreFM, config: PreFMConfig, meta: dict[str, Any] | None = None) -> Path:

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"format": CHECKPOINT_FORMAT, "config": config.to_dict(),
               "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
               "meta": dict(meta or {})}
    checkpoints.write(payload, path)
    return path
