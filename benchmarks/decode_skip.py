"""What decoding only the used frames saves: frames the sampler cannot take decoded only when they are
references (`pipelines/media/decode.py`), against decoding every frame (FORESIGHT_DECODE_ALL=1), alternated in
one run so the ratios hold on a loaded machine.

    python benchmarks/decode_skip.py [--repeats 3] [--analyze]

Prints, per clip, the decoder's CPU seconds either way (the MediaDecoder at 2 fps, FFmpeg's frame threads) and
the share of frames left undecoded; with `--analyze`, a whole `foresight analyze CLIP --no-asr` in a fresh
process either way (CPU seconds of the process, medians). The last line is JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.multistream import scene_clip  # noqa: E402
from pipelines.media.decode import DECODE_ALL_ENV, MediaDecoder  # noqa: E402


def decode_cpu(path: Path, skip: bool) -> tuple[float, int, int]:
    """CPU seconds of this process to decode `path` at 2 fps, frames decoded and frames skipped."""
    import av

    t0 = time.process_time()
    with av.open(str(path)) as container:
        decoder = MediaDecoder(container, 2.0, 640, skip_unsampled=skip)
        for _ in decoder:
            pass
    return time.process_time() - t0, decoder.frames_decoded, decoder.frames_skipped


def analyze_cpu(path: Path, skip: bool) -> float:
    """CPU seconds of a fresh `foresight analyze path --no-asr` (children of this process)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(DECODE_ALL_ENV, None)
    if not skip:
        env[DECODE_ALL_ENV] = "1"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "app.cli", "analyze", str(path), "--no-asr", "-q"], cwd=ROOT, env=env,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--analyze", action="store_true", help="also whole analyses in fresh processes")
    args = ap.parse_args()
    clips = {"demo (640x360 25 fps)": ROOT / "data" / "demo.mp4", "static 720p30": scene_clip("static"),
             "moving 720p30": scene_clip("moving")}
    out = {}
    for name, path in clips.items():
        runs: dict[bool, list] = {False: [], True: []}
        for _ in range(args.repeats):
            for skip in (False, True):  # alternated: both see the same load
                runs[skip].append(decode_cpu(path, skip))
        every, used = (statistics.median(r[0] for r in runs[s]) for s in (False, True))
        decoded, skipped = runs[True][0][1:]
        row = {"decode_cpu_s_every": round(every, 2), "decode_cpu_s_used": round(used, 2),
               "decode_ratio": round(used / every, 3), "frames_skipped_share": round(skipped / (decoded + skipped), 3)}
        if args.analyze:
            cpu: dict[bool, list] = {False: [], True: []}
            for _ in range(args.repeats):
                for skip in (False, True):
                    cpu[skip].append(analyze_cpu(path, skip))
            a_every, a_used = statistics.median(cpu[False]), statistics.median(cpu[True])
            row.update(analyze_cpu_s_every=round(a_every, 2), analyze_cpu_s_used=round(a_used, 2),
                       analyze_ratio=round(a_used / a_every, 3))
        out[name] = row
        print(f"{name}: " + ", ".join(f"{k} {v}" for k, v in row.items()), flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
