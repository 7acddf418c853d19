"""Teacher features for PreFM's distillation on corpus v3: YAMNet's 1024-d embedding of each clip second.

Written in PreFM's LLP layout, `label/feature_label/{audio,visual}/<id>.npy` (T x 1024). The audio teacher is
YAMNet's embedding (`models.audio.yamnet_embed`), standing in for ONE-PEACE's audio features. There is no
visual teacher, so the visual rows are zeros, which `training.prefm.losses.cosine_distillation` skips (a zero
teacher row carries no direction to align with). Existing files of the right length are kept (resumable).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def write_teachers(root: str | Path, lengths: dict[str, int], progress: bool = True) -> int:
    """Teacher files for every clip id in `lengths` (id -> encoded seconds); returns how many were written."""
    from tqdm import tqdm

    from models.audio.yamnet_embed import EMBED_DIM, YamnetEmbedder
    from training.media.synth import load_audio

    root = Path(root)
    out_a, out_v = root / "label" / "feature_label" / "audio", root / "label" / "feature_label" / "visual"
    out_a.mkdir(parents=True, exist_ok=True)
    out_v.mkdir(parents=True, exist_ok=True)
    embedder, written = None, 0
    for cid, seconds in tqdm(sorted(lengths.items()), desc="YAMNet teacher", disable=not progress):
        pa, pv = out_a / f"{cid}.npy", out_v / f"{cid}.npy"
        if pa.is_file() and pv.is_file() and np.load(pa, mmap_mode="r").shape == (seconds, EMBED_DIM):
            continue
        embedder = embedder or YamnetEmbedder(threads=1)
        audio = load_audio(root / "clips" / f"{cid}.mp4")
        np.save(pa, embedder.embed_track(audio, seconds))
        np.save(pv, np.zeros((seconds, EMBED_DIM), np.float32))
        written += 1
    return written
