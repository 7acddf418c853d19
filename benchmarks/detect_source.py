"""What `--detect-source` saves: one recorded 720p30 camera analysed from its own stream, against the same camera
analysed from a 320x180 sub-stream of the same scene while its 720p stream is recorded (Frigate's detect/record).

Both cameras are loopback RTSP servers looping the benchmark clip (`long_clip`, 720p30, speech and sounds) and
its 320x180 copy (ffmpeg, sound kept); both runs record the 720p stream (as `serve` does), on the default stages.
After a warm-up that loads the models, the two settings alternate (`--rounds` each, `--seconds` per run).
`cpu_cores` is the CPU seconds of every pipeline process (this driver and its Ray processes; not the RTSP
servers) per wall second, from `multistream.Sampler`. The last line is JSON: per setting the cores of each
round and their median, `ratio` = detect-stream median / main-stream median (measured in this run), the p95
latency and dropped seconds; the load average says how busy the machine was.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._media import long_clip  # noqa: E402
from benchmarks.multistream import run  # noqa: E402
from pipelines import AnalyzeOptions, StageConfig  # noqa: E402
from pipelines.media.recorder import RecordConfig  # noqa: E402
from pipelines.spine.runtime import ensure_ray  # noqa: E402
from training.media.loopback import RtspServer  # noqa: E402


def small_copy(clip: Path, width: int, height: int) -> Path:
    """`clip` scaled to width x height (its sound copied), built once next to it."""
    path = clip.with_name(f"{clip.stem}_{width}x{height}.mp4")
    if not path.exists():
        subprocess.run(["ffmpeg", "-nostdin", "-y", "-loglevel", "error", "-i", str(clip), "-vf",
                        f"scale={width}:{height}", "-c:v", "libx264", "-g", "30", "-c:a", "copy", str(path)],
                       check=True)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60.0, help="seconds per run")
    ap.add_argument("--rounds", type=int, default=2, help="runs of each setting, alternating")
    ap.add_argument("--size", default="320x180", help="the detect stream's WIDTHxHEIGHT")
    ap.add_argument("--warmup", type=float, default=15.0)
    ap.add_argument("--clip", type=Path, help="the 720p clip the cameras loop (default: the 1-min benchmark clip)")
    args = ap.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    clip = args.clip or long_clip(1.0)
    main_cam, sub_cam = RtspServer(clip), RtspServer(small_copy(clip, width, height))
    main_cam.start()
    sub_cam.start()
    ensure_ray()
    runs: dict[str, list[dict]] = {"main": [], "detect": []}
    try:
        with tempfile.TemporaryDirectory(prefix="detsrc-bench-") as tmp:
            def options(detect: bool, seconds: float, n: int) -> AnalyzeOptions:
                return AnalyzeOptions(stages=StageConfig(), duration_s=seconds, rtsp_transport="udp",
                                      record=RecordConfig(str(Path(tmp) / f"rec{n}")),
                                      detect_source=sub_cam.url if detect else None)

            run([main_cam.url], options(False, args.warmup, 0))
            for n in range(args.rounds):
                for name in ("main", "detect"):
                    results, latencies, sampler = run([main_cam.url], options(name == "detect", args.seconds, n))
                    lat = latencies[0]
                    runs[name].append({"cpu_cores": round(sampler.cores, 3),
                                       "p95_s": round(float(np.percentile(lat, 95)), 3) if lat else None,
                                       "dropped": int(results[0]["ingest"]["segments_dropped"]),
                                       "segments": int(results[0]["ingest"]["segments_emitted"])})
                    print(f"round {n} {name}: {runs[name][-1]}", flush=True)
    finally:
        main_cam.kill()
        sub_cam.kill()
    median = {k: statistics.median(r["cpu_cores"] for r in v) for k, v in runs.items()}
    print(json.dumps({"main": "1280x720 30 fps", "detect": f"{width}x{height}", "seconds": args.seconds,
                      "runs": runs, "cpu_cores_median": median,
                      "ratio": round(median["detect"] / median["main"], 3),
                      "load_average": round(os.getloadavg()[0], 2), "cpus": os.cpu_count()}))


if __name__ == "__main__":
    main()
