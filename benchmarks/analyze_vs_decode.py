"""`foresight analyze` wall time on a long 720p30 clip divided by the bare decode time of the same file.

Target (issue 2): at most 2.0 with speech and audio tags on. Both are measured in this run, back to back.
With `--rounds N` each configuration is timed N times, each run right after a bare decode of its own (pairs, so a
machine whose speed drifts still gives the same ratio), and the median of the N ratios is printed with their
range: issue 28's rule for text on screen (the full stack at most 4.61x bare decode) is read from that median.
"""

from __future__ import annotations

import argparse
import json
import statistics
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


CONFIGS = {"speech": ("speech + audio tags (issue 2 target <= 2.0)", ["--no-visual", "--no-safety", "--events", "tags"]),
           "default": ("full default stack (visual perception, PreFM if shipped, safety; no text on screen)", []),
           "ocr4": ("full stack reading text at most every 4 s (--ocr --ocr-every 4)", ["--ocr", "--ocr-every", "4"]),
           "ocr": ("full stack reading text at most every 2 s (--ocr)", ["--ocr"])}


def bare_decode(clip: Path) -> float:
    return timed(["ffmpeg", "-nostdin", "-v", "error", "-i", str(clip), "-f", "null", "-"])


def analyze(clip: Path, flags: list[str]) -> tuple[float, dict]:
    """`foresight analyze`'s process wall (Ray start and model loading included) and its result."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        wall = timed([sys.executable, "-m", "app.cli", "analyze", str(clip), "--out", str(out), "-q", *flags])
        return wall, json.loads(out.read_text())


def rounds(clip: Path, keys: list[str], n: int) -> None:
    """Round-robin over the configurations, n rounds, each analyze right after its own bare decode."""
    ratios: dict[str, list[float]] = {k: [] for k in keys}
    print(f"clip: {clip.name}; {n} rounds of (bare decode, analyze) for each of {', '.join(keys)}", flush=True)
    for r in range(n):
        for key in keys:
            decode = bare_decode(clip)
            wall, _ = analyze(clip, CONFIGS[key][1])
            ratios[key].append(wall / decode)
            print(f"  round {r + 1} {key}: decode {decode:.1f} s, analyze {wall:.1f} s, ratio {wall / decode:.2f}",
                  flush=True)
    for key in keys:
        got = sorted(ratios[key])
        print(f"{CONFIGS[key][0]}: analyze / decode median {statistics.median(got):.2f} "
              f"(min {got[0]:.2f}, max {got[-1]:.2f}, {n} pairs)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--clip", type=Path, help="time this file instead of the cached benchmark clip")
    ap.add_argument("--rounds", type=int, default=1, help="pairs (bare decode, analyze) per configuration")
    ap.add_argument("--only", help="comma-separated configuration keys: " + ", ".join(CONFIGS))
    args = ap.parse_args()
    if args.rounds < 1 or args.minutes <= 0:
        ap.error("--rounds must be at least 1 and --minutes above 0")
    if args.clip is not None and not args.clip.is_file():
        ap.error(f"no such clip: {args.clip}")
    keys = args.only.split(",") if args.only else list(CONFIGS)
    if unknown := [k for k in keys if k not in CONFIGS]:
        ap.error(f"unknown configuration(s) {unknown}: say {', '.join(CONFIGS)}")
    clip = args.clip or long_clip(args.minutes)
    if args.rounds > 1:
        return rounds(clip, keys, args.rounds)
    decode = bare_decode(clip)
    print(f"clip: {clip.name}; bare decode (ffmpeg -f null): {decode:.1f} s")
    for key in keys:
        name, flags = CONFIGS[key]
        wall, result = analyze(clip, flags)
        print(f"{name}:")
        print(f"  foresight analyze {wall:.1f} s (process wall: Ray start and model loading included), pipeline "
              f"{result['timings']['wall_s']:.1f} s; {len(result['events'])} events, "
              f"{len(result['transcript'])} transcript segments")
        print(f"  ratio analyze / decode = {wall / decode:.2f}; pipeline / decode = "
              f"{result['timings']['wall_s'] / decode:.2f}")


if __name__ == "__main__":
    main()
