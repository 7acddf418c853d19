"""WER and real-time factor of the Whisper models on real recorded English speech that a package carries.

    python -m training.experiments.asr_tuxpaint_en --out docs/results/asr_tuxpaint_en.json

The speech: tuxpaint-stamps-default's English stamp descriptions (`<stem>_desc.ogg`, recorded human voices),
with the first line of `<stem>.txt` ("A dog.") as the reference. Each recording is transcribed whole, and once
more with its first 0.3 s cut off, which mimics a speech span that starts late (the soft-first-word failure:
"Please enter your password" heard as "into your password"). WER is word-level edit distance over reference
words, pooled over all recordings, after lower-casing and dropping punctuation; RTF is decoding seconds over
audio seconds on one thread.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

import numpy as np

RATE = 16_000
LATE_S = 0.3


def words(text: str) -> list[str]:
    return re.sub(r"[^a-z0-9' ]+", " ", text.lower()).split()


def edit_distance(ref: list[str], hyp: list[str]) -> int:
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1]


def bench(spec: str, items: list[tuple[str, np.ndarray, str]]) -> dict:
    """Pooled WER (whole and late-start spans), RTF and every hypothesis for one recognizer spec."""
    from models.audio.asr import make_recognizer

    rec = make_recognizer(spec, language="en", threads=1)
    rec.transcribe(items[0][1], 0.0)  # warm-up, not timed
    errs = {"whole": 0, "late": 0}
    n_ref, decode_s, audio_s, rows = 0, 0.0, 0.0, []
    for key, audio, ref in items:
        row = {"file": key, "ref": ref}
        for kind, clip in (("whole", audio), ("late", audio[int(LATE_S * RATE):])):
            t0 = time.perf_counter()
            hyp = " ".join(s.text for s in rec.transcribe(clip, 0.0)).strip()
            if kind == "whole":
                decode_s += time.perf_counter() - t0
                audio_s += audio.size / RATE
            errs[kind] += edit_distance(words(ref), words(hyp))
            row[kind] = hyp
        n_ref += len(words(ref))
        rows.append(row)
    return {"model": spec, "files": len(items), "ref_words": n_ref, "wer": round(errs["whole"] / n_ref, 4),
            "wer_first_0.3s_cut": round(errs["late"] / n_ref, 4), "rtf": round(decode_s / audio_s, 4),
            "audio_s": round(audio_s, 1), "hypotheses": rows}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.experiments.asr_tuxpaint_en", description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="tiny.en,base")
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    import torch

    from training.corpus.real_sources import TUXPAINT_STAMPS, english_descriptions
    from training.media.synth import load_audio

    torch.set_num_threads(1)
    items = [(str(path.relative_to(TUXPAINT_STAMPS)), load_audio(path), ref) for path, ref in english_descriptions()]
    if not items:
        print("error: no English tuxpaint descriptions found (apt-get install tuxpaint-stamps-default)")
        return 2
    results = [bench(spec, items) for spec in a.models.split(",")]
    Path(a.out).write_text(json.dumps({"source": "tuxpaint-stamps-default *_desc.ogg", "late_start_s": LATE_S,
                                       "results": results}, indent=1))
    for r in results:
        print(f"{r['model']}: WER {100 * r['wer']:.1f} % (first {LATE_S} s cut: {100 * r['wer_first_0.3s_cut']:.1f} %)"
              f", RTF {r['rtf']:.3f} over {r['files']} files, {r['audio_s']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
