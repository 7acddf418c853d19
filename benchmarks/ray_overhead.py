"""Ray overhead: time the ingest actor spends in actor calls and object transfers, as a share of the
pipeline's wall time, and the actor pipeline's wall time against the same stages run inline in one process.

Target (issue 2): under 5 %.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._media import long_clip  # noqa: E402
from pipelines import analyze, analyze_inline  # noqa: E402
from pipelines.spine.runtime import ensure_ray  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--minutes", type=float, default=2.0)
    args = ap.parse_args()
    clip = str(long_clip(args.minutes))
    ensure_ray()
    t0 = time.perf_counter()
    inline = analyze_inline(clip)
    inline_wall = time.perf_counter() - t0
    actors = analyze(clip)
    wall = actors["timings"]["wall_s"]
    calls = actors["timings"]["ray_call_s"]
    print(f"clip {Path(clip).name}: {actors['duration_s']:.0f} s")
    print(f"actor pipeline wall {wall:.1f} s (actor start and model loading included); inline {inline_wall:.1f} s")
    print(f"time in actor calls and ray.put: {calls:.2f} s = {100 * calls / wall:.2f} % of pipeline wall "
          f"(target < 5 %)")
    print(f"ratio actors / inline wall = {wall / inline_wall:.2f}")
    assert inline["transcript"] and actors["transcript"]


if __name__ == "__main__":
    main()
