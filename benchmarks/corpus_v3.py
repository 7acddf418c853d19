"""What a corpus-v3 build and a PreFM epoch cost, against bare decoding of the same clips in the same run.

Composes a small corpus v3 (`--clips`, default 6) into a temporary folder, encodes it with the embedded
encoder (no ASR), then times bare PyAV decoding of the same clips, and one PreFM training epoch (small
preset, one thread) on the existing corpus's training split when `--corpus` has one. Prints seconds, seconds
per clip-second, and the ratios encode / decode and compose / decode; the last line is JSON.

    python benchmarks/corpus_v3.py [--clips 6] [--corpus data/corpus_v3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "1")


def bare_decode_s(clips: list[Path]) -> float:
    """Seconds to decode every video and audio frame of `clips` with PyAV, doing nothing with them."""
    import av

    t0 = time.perf_counter()
    for path in clips:
        with av.open(str(path)) as container:
            for _ in container.decode(*container.streams):
                pass
    return time.perf_counter() - t0


def prefm_epoch_s(corpus: Path) -> float | None:
    """Seconds of one PreFM training epoch (small preset, PreFM variant, no validation) on `corpus`'s train split."""
    if not (corpus / "data_info_encoded" / "train_pd.csv").is_file():
        return None
    import torch

    from models.prefm.modeling_prefm import preset
    from training.experiments.prefm_v3 import _store
    from training.prefm.trainer import TrainConfig, train

    torch.set_num_threads(1)
    store = _store(corpus, "train", encoded_only=True)
    tcfg = TrainConfig(epochs=1, warmup_epochs=0, val_every=10 ** 6, batch_size=32, progress=False)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        train(preset("small", positional=True), store, None, tcfg, Path(tmp) / "epoch.pt")
        return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clips", type=int, default=6)
    p.add_argument("--corpus", type=Path, default=Path("data/corpus_v3"), help="an encoded corpus v3 for the epoch")
    a = p.parse_args(argv)
    from training.corpus.compose_v3 import compose_corpus_v3
    from training.corpus.features import encode_corpus

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        truths = compose_corpus_v3(tmp, a.clips, seed=0, progress=False)
        compose_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        lengths = encode_corpus(tmp, asr=None, progress=False)
        encode_s = time.perf_counter() - t1
        decode_s = bare_decode_s(sorted((Path(tmp) / "clips").glob("*.mp4")))
    seconds = sum(lengths.values()) or sum(t.duration for t in truths)
    epoch_s = prefm_epoch_s(a.corpus)
    out = {"clips": len(truths), "video_s": seconds, "compose_s": round(compose_s, 2), "encode_s": round(encode_s, 2),
           "decode_s": round(decode_s, 3), "encode_per_video_s": round(encode_s / seconds, 4),
           "encode_over_decode": round(encode_s / decode_s, 1), "compose_over_decode": round(compose_s / decode_s, 1),
           "prefm_epoch_s": None if epoch_s is None else round(epoch_s, 2)}
    print(f"{out['clips']} clips, {seconds} s of video: compose {compose_s:.1f} s, encode {encode_s:.1f} s "
          f"({out['encode_per_video_s'] * 1000:.0f} ms per video second), bare decode {decode_s:.2f} s "
          f"(encode = {out['encode_over_decode']}x decode)")
    print("PreFM epoch: " + ("no encoded corpus at " + str(a.corpus) if epoch_s is None else f"{epoch_s:.1f} s"))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
