"""Word accuracy of the text reader on the labelled sign set (`training/signs/build.py`).

Word accuracy = exact word matches / words: per frame, the sign's words (upper case) against the words read
(`models.encoders.text_reader.words`), matched as multisets. Settings are chosen on val; test is scored once
with the chosen ones.

    python -m benchmarks.signs_ocr --signs data/signs --split val --side 480 640 --space-boost 1 30 100 300
    python -m benchmarks.signs_ocr --signs data/signs --split test --side 640 --out docs/results/signs_ocr.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path


def score(signs: Path, split: str, side: int, min_score: float, space_boost: float) -> dict:
    """Word accuracy, frame exact-match rate and ms a frame of one reader setting on one split."""
    import numpy as np
    from PIL import Image

    from models.encoders.text_reader import TextReader, normalise, words

    manifest = json.loads((signs / "manifest.json").read_text())
    items = manifest["splits"][split]
    reader = TextReader(side, min_score, space_boost=space_boost)
    hit = total = exact = 0
    ms: list[float] = []
    misses = []
    for item in items:
        rgb = np.asarray(Image.open(signs / item["file"]).convert("RGB"))
        t0 = time.perf_counter()
        readings = reader.read(rgb)
        ms.append((time.perf_counter() - t0) * 1000)
        truth, read = Counter(normalise(item["text"]).split()), Counter(words(readings))
        got = sum((truth & read).values())
        hit, total = hit + got, total + sum(truth.values())
        exact += got == sum(truth.values())
        if got < sum(truth.values()):
            misses.append({"id": item["id"], "text": item["text"], "read": [r["text"] for r in readings]})
    return {"split": split, "side": side, "min_score": min_score, "space_boost": space_boost, "frames": len(items), "words": total,
            "words_read": hit, "word_accuracy": round(hit / max(total, 1), 4),
            "frames_all_words": round(exact / max(len(items), 1), 4),
            "ms_per_frame_median": round(float(np.median(ms)), 1), "misses": misses}


def picture(signs: Path, split: str, side: int, min_score: float, space_boost: float, out: Path) -> None:
    """The split's first frame whose sign says EXIT (else its first), with the readings boxed as the dashboard
    draws them."""
    import numpy as np
    from PIL import Image

    from models.encoders.text_reader import TextReader
    from ui.picture import draw_boxes

    items = json.loads((signs / "manifest.json").read_text())["splits"][split]
    item = next((i for i in items if i["text"] == "EXIT"), items[0])
    rgb = np.asarray(Image.open(signs / item["file"]).convert("RGB"))
    readings = TextReader(side, min_score, space_boost=space_boost).read(rgb)
    out.parent.mkdir(parents=True, exist_ok=True)
    draw_boxes(rgb, {"frame_size": [rgb.shape[1], rgb.shape[0]]}, text=readings).save(out)
    print(f"wrote {out}: {item['text']!r} read as {[r['text'] for r in readings]}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--signs", type=Path, default=Path("data/signs"), help="the built set (training.signs.build)")
    p.add_argument("--split", choices=["val", "test"], default="val")
    p.add_argument("--side", type=int, nargs="+", default=[640], help="detector's longest side(s) to try")
    p.add_argument("--min-score", type=float, default=0.5)
    p.add_argument("--space-boost", type=float, nargs="+", default=[100.0],
                   help="factor(s) on the recogniser's space probability to try (models/encoders/text_reader.py)")
    p.add_argument("--out", type=Path, help="write the result JSON here")
    p.add_argument("--picture", type=Path, help="also draw what was read on the split's first EXIT frame (PNG)")
    args = p.parse_args(argv)
    if not (args.signs / "manifest.json").is_file():
        print(f"no sign set at {args.signs}: build it with python -m training.signs.build --out {args.signs}",
              file=sys.stderr)
        return 2
    import onnxruntime

    results = []
    for side, boost in [(s, b) for s in args.side for b in args.space_boost]:
        r = score(args.signs, args.split, side, args.min_score, boost)
        results.append(r)
        print(f"{args.split} side={side} space_boost={boost:g}: word accuracy {r['word_accuracy']:.3f} ({r['words_read']}/{r['words']} "
              f"words), all words of a frame {r['frames_all_words']:.3f}, {r['ms_per_frame_median']} ms/frame "
              "(1 thread)")
    if args.picture:
        picture(args.signs, args.split, args.side[0], args.min_score, args.space_boost[0], args.picture)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"reader": "PP-OCRv4 (rapidocr-onnxruntime)",
                                        "onnxruntime": onnxruntime.__version__, "results": results}, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
