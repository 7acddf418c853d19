"""Time to fail on bad sources: `foresight analyze` on a missing file, a corrupt file, refused RTSP and HTTP
URLs and an unresolvable host, each against the bare interpreter start-up measured in the same run.

Targets (issue 13): a refused or unreachable URL exits 2 within 3 s, a missing or corrupt file within 2 s.

    python benchmarks/fail_fast.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(args: list[str]) -> tuple[float, int]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True)
    return time.perf_counter() - t0, proc.returncode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each case (the median is printed)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        corrupt = Path(tmp) / "corrupt.mp4"
        corrupt.write_bytes(bytes(range(256)) * 400)
        cases = {
            "missing file (target 2 s)": (str(Path(tmp) / "nope.mp4"), 2.0),
            "corrupt file (target 2 s)": (str(corrupt), 2.0),
            "refused rtsp:// (target 3 s)": (f"rtsp://127.0.0.1:{free_port()}/live", 3.0),
            "refused http:// (target 3 s)": (f"http://127.0.0.1:{free_port()}/clip.mp4", 3.0),
            "unresolvable host (target 3 s)": ("rtsp://no-such-camera.invalid/live", 3.0),
        }
        base = statistics.median(timed(["-c", "pass"])[0] for _ in range(args.repeat))
        print(f"reference: bare interpreter start-up {base:.2f} s (median of {args.repeat})")
        for name, (source, target) in cases.items():
            runs = [timed(["-m", "app.cli", "analyze", source, "-q"]) for _ in range(args.repeat)]
            wall = statistics.median(t for t, _ in runs)
            codes = sorted({c for _, c in runs})
            print(f"{name:34s} {wall:5.2f} s  = {wall / base:4.1f}x start-up  exit {codes}  "
                  f"{'ok' if wall <= target and codes == [2] else 'MISSED'}")


if __name__ == "__main__":
    main()
