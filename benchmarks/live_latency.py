"""Live latency on a 30 fps RTSP loopback stream: delay from a segment's end (the moment it is complete) to its
results leaving the sink; p50/p95 overall and p95 of the first and last third (growth over time).

Target (issue 2): p95 at most 1.0 s, no unbounded growth over 10 minutes (`--seconds 600`). The resident size
of every pipeline process is sampled every 2 s as well: the soak of issue 19 (`--seconds 3600`) wants the mean
of the last third within 5 % of the first third's. The last line is JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from app.progress import Progress  # noqa: E402
from benchmarks._media import long_clip  # noqa: E402
from benchmarks.multistream import Sampler  # noqa: E402
from pipelines import AnalyzeOptions, Pipeline  # noqa: E402
from pipelines.spine.runtime import ensure_ray  # noqa: E402
from training.media.loopback import RtspServer  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=600.0)
    args = ap.parse_args()
    server = RtspServer(long_clip(1.0))
    server.start()
    ensure_ray()
    try:
        sampler = Sampler()
        pipe = Pipeline(server.url, AnalyzeOptions(duration_s=args.seconds, rtsp_transport="udp"))
        t0 = time.time()
        with Progress("bar") as shown:
            result = pipe.wait(shown.update)
        lat = np.array(pipe.latencies())
        pipe.close()
        rss = sampler.stop()
    finally:
        server.kill()
    third = max(1, lat.size // 3)
    p95 = float(np.percentile(lat, 95))
    first, last = np.percentile(lat[:third], 95), np.percentile(lat[-third:], 95)
    print(f"{lat.size} segments over {time.time() - t0:.0f} s; dropped frames {result['ingest']['frames_dropped']}")
    print(f"latency p50 {np.percentile(lat, 50):.3f} s, p95 {p95:.3f} s, max {lat.max():.3f} s")
    print(f"ratio p95 / 1.0 s target = {p95:.2f}")
    print(f"growth: p95 last third / first third = {last / first:.2f} ({first:.3f} s -> {last:.3f} s)")
    rss_third = max(1, len(rss) // 3)
    rss_growth = float(np.mean(rss[-rss_third:]) / np.mean(rss[:rss_third]))
    print(f"resident size: peak {max(rss):.2f} GB; mean of the last third / first third = {rss_growth:.3f}")
    print(json.dumps({"seconds": args.seconds, "segments": int(lat.size), "p95_s": round(p95, 3),
                      "p95_growth": round(float(last / first), 3), "rss_gb": round(max(rss), 2),
                      "rss_growth": round(rss_growth, 4), "segments_dropped": result["ingest"]["segments_dropped"]}))


if __name__ == "__main__":
    main()
