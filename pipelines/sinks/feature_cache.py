"""Per-video feature arrays on disk, in PreFM's layout, keyed by content hash and encoder version.

Layout under `root` (one id per video, the file stem unless given):
- `hf`:       `CLIP/<id>.npy` (T x Dv) and `CLAP/<id>.npy` (T x Da), plain float32 arrays as in PreFM's
              release (`dataset/<set>/data/{CLIP,CLAP}`), so `training/prefm/data.py` reads them as they are;
- `embedded`: `embedded/<id>.npz` in `models.trisense.features.ClipFeatures` format (visual, audio, speech
              arrays + masks + transcript + events, what the grounder indexes), and `embedded/audio/<id>.npy`,
              `embedded/visual/<id>.npy` (T x D, float32), the layout `training/prefm/data.py` calls "embedded";
- `manifest/<encoder>/<id>.json`: content hash, encoder version, seconds, masks, and the per-second
              readable detections. A cached entry is used only when both the hash and the version match.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from models.encoders.base import Encoder, SecondFeatures, encode_segment
from models.trisense.features import ClipFeatures
from pipelines.media.segmenter import iter_segments
from pipelines.media.sources import content_hash


def encode_file(path: str | Path, encoder: Encoder, recognizer=None, speech_embedder=None,
                sample_fps: float = 2.0) -> tuple[ClipFeatures, list[dict]]:
    """Run `encoder` over every second of a file; optional ASR (on the whole audio) feeds the speech modality.

    Returns the clip's features and the per-second readable detections.
    """
    encoder.reset()
    seconds: list[SecondFeatures] = []
    audio_parts: list[np.ndarray] = []
    for segment in iter_segments(path, sample_fps=sample_fps):
        seconds.append(encode_segment(encoder, segment))
        if segment.audio is not None:
            audio_parts.append(segment.audio)
    if not seconds:
        raise ValueError(f"{path}: no decodable seconds")
    audio = np.stack([s.audio for s in seconds])
    visual = np.stack([s.visual for s in seconds])
    audio_mask = np.array([s.audio_available for s in seconds])
    visual_mask = np.array([s.visual_available for s in seconds])
    transcript: list[dict] = []
    speech = speech_mask = None
    if recognizer is not None and audio_parts:
        transcript = [t.to_dict() for t in recognizer.transcribe(np.concatenate(audio_parts), 0.0)]
        if speech_embedder is None:
            from models.encoders.speech_embed import SpeechEmbedder

            speech_embedder = SpeechEmbedder()
        speech, speech_mask = speech_embedder.embed_clip(transcript, len(seconds))
    features = ClipFeatures(visual=visual, audio=audio, speech=speech, visual_mask=visual_mask,
                            audio_mask=audio_mask, speech_mask=speech_mask, transcript=transcript)
    return features, [s.to_dict() for s in seconds]


class FeatureCache:
    """`get_or_compute(video, encoder)` returns cached `ClipFeatures` or computes and stores them."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def _manifest(self, encoder: Encoder, video_id: str) -> Path:
        return self.root / "manifest" / encoder.name / f"{video_id}.json"

    def paths(self, encoder: Encoder, video_id: str) -> dict[str, Path]:
        """Where the arrays of `video_id` live for this encoder."""
        if encoder.name == "hf":
            return {"visual": self.root / "CLIP" / f"{video_id}.npy", "audio": self.root / "CLAP" / f"{video_id}.npy"}
        base = self.root / encoder.name
        return {"clip": base / f"{video_id}.npz", "audio": base / "audio" / f"{video_id}.npy",
                "visual": base / "visual" / f"{video_id}.npy"}

    def lookup(self, video_path: str | Path, encoder: Encoder, video_id: str | None = None,
               digest: str | None = None) -> ClipFeatures | None:
        """The cached features if present and made from these bytes by this encoder version, else None."""
        video_id = video_id or Path(video_path).stem
        manifest = self._manifest(encoder, video_id)
        if not manifest.is_file():
            return None
        meta = json.loads(manifest.read_text())
        digest = digest or content_hash(video_path)
        paths = self.paths(encoder, video_id)
        if meta.get("sha256") != digest or meta.get("version") != encoder.version:
            return None
        if not all(p.is_file() for p in paths.values()):
            return None
        if "clip" in paths:
            return ClipFeatures.load(paths["clip"])
        return ClipFeatures(visual=np.load(paths["visual"]), audio=np.load(paths["audio"]),
                            visual_mask=np.array(meta["visual_mask"], bool), audio_mask=np.array(meta["audio_mask"], bool))

    def detections(self, encoder: Encoder, video_id: str) -> list[dict]:
        """Per-second readable detections stored with the features (empty for encoders that have none)."""
        manifest = self._manifest(encoder, video_id)
        if not manifest.is_file():
            raise FileNotFoundError(f"no cached features for {video_id} with encoder {encoder.name}")
        return json.loads(manifest.read_text()).get("seconds", [])

    def get_or_compute(self, video_path: str | Path, encoder: Encoder, video_id: str | None = None,
                       recognizer=None) -> ClipFeatures:
        """Features of `video_path`, computed at most once per (content, encoder version)."""
        video_path = Path(video_path)
        if not video_path.is_file():
            raise FileNotFoundError(f"no video at {video_path}")
        video_id = video_id or video_path.stem
        digest = content_hash(video_path)
        cached = self.lookup(video_path, encoder, video_id, digest)
        if cached is not None:
            return cached
        features, seconds = encode_file(video_path, encoder, recognizer=recognizer)
        self._store(encoder, video_id, digest, features, seconds)
        return features

    def _store(self, encoder: Encoder, video_id: str, digest: str, features: ClipFeatures, seconds: list[dict]) -> None:
        paths = self.paths(encoder, video_id)
        for p in paths.values():
            p.parent.mkdir(parents=True, exist_ok=True)
        np.save(paths["visual"], features.visual.astype(np.float32))
        np.save(paths["audio"], features.audio.astype(np.float32))
        if "clip" in paths:
            features.save(paths["clip"])
        manifest = self._manifest(encoder, video_id)
        manifest.parent.mkdir(parents=True, exist_ok=True)
        meta = {"sha256": digest, "version": encoder.version, "encoder": encoder.name,
                "seconds_count": features.num_seconds, "audio_dim": int(features.audio.shape[1]),
                "visual_dim": int(features.visual.shape[1]),
                "audio_mask": features.audio_mask.tolist(), "visual_mask": features.visual_mask.tolist(),
                "seconds": seconds}
        tmp = manifest.with_suffix(".tmp")
        tmp.write_text(json.dumps(meta))
        tmp.replace(manifest)  # the manifest is written last: a crash mid-way leaves no valid entry
