"""Encode every composed clip once with the embedded encoder (plus ASR and MiniLM speech embeddings).

Through `pipelines.sinks.feature_cache.FeatureCache` rooted at the corpus folder this writes PreFM's embedded layout
(`embedded/{audio,visual}/<id>.npy`) and the per-second detections (`manifest/embedded/<id>.json`); a clip
already encoded from the same bytes by the same encoder version is not encoded again. For the grounder it
writes `grounding/features/<id>.npz` (`ClipFeatures`) with the detector label events the app's parser would
emit (AudioSet tags and COCO objects, as `pipelines.stages.ParserStage` selects them), which the
text-matching baseline reads. Labels are cut or padded to the encoded number of seconds.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from models.encoders.visual_config import VisualConfig
from models.events import EventTracker
from models.trisense.features import ClipFeatures
from pipelines.sinks.feature_cache import FeatureCache
from training.corpus.layout import load_truths, write_labels, write_split_files
from training.corpus.truth import ClipTruth


def detection_events(seconds: list[dict]) -> list[dict]:
    """Label events `{"label","modality","start","end","confidence"}` from per-second detections, merged the
    way the live parser merges them (same tag threshold, top-k, visual score floor and gap)."""
    from pipelines.stages.config import StageConfig
    from pipelines.stages.parser import tag_labels

    config = StageConfig()
    tracker = EventTracker(max_gap=1)
    for k, sec in enumerate(seconds):
        start = float(sec.get("start", k))
        labels = tag_labels(config, sec.get("audio_tags") or {}, sec if sec.get("visual_available") else None)
        tracker.update(start, start + 1.0, labels)
    tracker.finish()
    return [e.to_dict() for e in sorted(tracker.closed, key=lambda e: (e.start, e.label))]


def second_labels_of(seconds: list[dict]) -> list[dict]:
    """Every class named in each encoded second (the grounder's evidence, as the live stage collects it)."""
    from models.trisense.evidence import second_labels

    return [label for k, sec in enumerate(seconds) for label in second_labels(
        float(sec.get("start", k)), sec.get("audio_tags") or {}, sec if sec.get("visual_available") else None)]


class CorpusEncoder:
    """The embedded encoder, the ASR model and MiniLM, loaded once for the whole corpus."""

    def __init__(self, asr: str | None = "tiny.en", visual: VisualConfig | None = None) -> None:
        import torch

        from models.encoders.registry import get_encoder

        torch.set_num_threads(1)
        self.encoder = get_encoder("embedded", visual=visual)
        self.recognizer = None
        if asr:
            from models.audio.asr import make_recognizer

            self.recognizer = make_recognizer(asr, language="en", threads=1)

    def close(self) -> None:
        self.encoder.close()

    def encode(self, root: Path, truth: ClipTruth) -> ClipFeatures:
        """Features of one clip (cached), its labels at the encoded length, and the grounder's `.npz`."""
        cache = FeatureCache(root)
        video = root / "clips" / f"{truth.clip_id}.mp4"
        features = cache.get_or_compute(video, self.encoder, video_id=truth.clip_id, recognizer=self.recognizer)
        seconds = cache.detections(self.encoder, truth.clip_id)
        features.events = detection_events(seconds)
        features.labels = second_labels_of(seconds)
        out = root / "grounding" / "features" / f"{truth.clip_id}.npz"
        out.parent.mkdir(parents=True, exist_ok=True)
        features.save(out)
        write_labels(root, truth, features.num_seconds)
        return features


def encode_corpus(root: str | Path, asr: str | None = "tiny.en", progress: bool = True,
                  visual: VisualConfig | None = None) -> dict[str, int]:
    """Encode all clips under `root` (with the app's default picture models unless `visual` says otherwise, e.g.
    another detector to feed a model the features it was trained on); returns the encoded seconds per clip id."""
    root = Path(root)
    truths = load_truths(root)
    if not truths:
        raise FileNotFoundError(f"no clips in {root}/truth")
    enc = CorpusEncoder(asr, visual)
    lengths: dict[str, int] = {}
    t0 = time.time()
    try:
        for i, truth in enumerate(truths):
            features = enc.encode(root, truth)
            lengths[truth.clip_id] = features.num_seconds
            if progress:
                rate = (time.time() - t0) / max(sum(lengths.values()), 1)
                print(f"encoded {truth.clip_id} ({i + 1}/{len(truths)}, {features.num_seconds} s, "
                      f"{1000 * rate:.0f} ms per video second so far)", flush=True)
    finally:
        enc.close()
    write_split_files(root, truths, lengths)
    return lengths


def feature_summary(root: str | Path) -> dict[str, float]:
    """Sizes of the encoded corpus, for the docs."""
    root = Path(root)
    files = list((root / "embedded" / "audio").glob("*.npy"))
    seconds = sum(int(np.load(p, mmap_mode="r").shape[0]) for p in files)
    return {"clips": len(files), "seconds": seconds}
