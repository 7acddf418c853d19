"""`foresight analyze` wall time on a long 720p30 clip divided by the bare decode time of the same file.

Target (issue 2): at most 2.0 with speech and audio tags on. Both are measured in this run, back to back.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._media import ROOT, long_clip  # noqa: E402


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--minutes", type=float, default=5.0)
    args = ap.parse_args()
    clip = long_clip(args.minutes)
    decode = timed(["ffmpeg", "-nostdin", "-v", "error", "-i", str(clip), "-f", "null", "-"])
    print(f"clip: {clip.name}; bare decode (ffmpeg -f null): {decode:.1f} s")
    configs = {"speech + audio tags (issue 2 target <= 2.0)": ["--no-visual", "--no-safety", "--events", "tags"],
               "full stack without text on screen (--no-ocr)": ["--no-ocr"],
               "full stack reading text at most every 4 s (--ocr-every 4)": ["--ocr-every", "4"],
               "full embedded stack (visual perception, text on screen, PreFM if shipped, safety)": []}
    for name, flags in configs.items():
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "r.json"
            wall = timed([sys.executable, "-m", "app.cli", "analyze", str(clip), "--out", str(out), "-q", *flags])
            result = json.loads(out.read_text())
        print(f"{name}:")
        print(f"  foresight analyze {wall:.1f} s (process wall: Ray start and model loading included), pipeline "
              f"{result['timings']['wall_s']:.1f} s; {len(result['events'])} events, "
              f"{len(result['transcript'])} transcript segments")
        print(f"  ratio analyze / decode = {wall / decode:.2f}; pipeline / decode = "
              f"{result['timings']['wall_s'] / decode:.2f}")


if __name__ == "__main__":
    main()
