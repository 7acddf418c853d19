"""One live camera through `foresight analyze` on each runner: CPU and memory of the whole process tree.

`multistream.py` measures the Ray path the server uses for many cameras (one ingest actor per stream, shared stage
hosts). A single camera through the CLI runs on the threads runner (the default since session 27; `--runner
inline`), with no Ray process at all, or on Ray with `--runner ray`. This
serves one loopback RTSP stream (the static scene or the moving clip, as `multistream.py --scene`), runs the CLI
on it for `--seconds` with each runner in turn (alternated, `--rounds` times), and reports CPU seconds of the CLI
and every process under it (the RTSP server left out) per wall second over the window from `--skip` seconds
after start to 3 s before the end (so start-up and model loading are not in it), and the tree's peak resident
size in that window.

    python -m benchmarks.runner_cost [--scene static|moving] [--seconds 90] [--skip 25] [--rounds 2]
        [--json docs/results/runner_cost.json]
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

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks._report import save_json  # noqa: E402
from benchmarks.multistream import NOT_PIPELINE, scene_clip  # noqa: E402
from training.media.loopback import RtspServer  # noqa: E402

RUNNERS = ("inline", "ray")


def tree(root: psutil.Process) -> dict[int, tuple[float, float]]:
    """Each process of the CLI's tree (less the RTSP servers): (CPU seconds so far, resident GB)."""
    out = {}
    try:
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return out
    for p in procs:
        try:
            if p.name() not in NOT_PIPELINE:
                out[p.pid] = (sum(p.cpu_times()[:2]), p.memory_info().rss / 1e9)
        except psutil.Error:
            pass
    return out


def measure(url: str, runner: str, seconds: float, skip: float) -> dict:
    """Run the CLI on `url` with `runner`; its cores and peak resident GB over the window, and its exit code."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "app.cli", "analyze", url, "--rtsp-transport", "udp", "--duration",
               f"{seconds:g}", "--runner", runner, "--out", str(Path(tmp) / "result.json"), "-q"]
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        root = psutil.Process(proc.pid)
        started, first, last, peak = time.monotonic(), None, None, 0.0
        while proc.poll() is None:
            time.sleep(1.0)
            elapsed = time.monotonic() - started
            if elapsed < skip or elapsed > seconds - 3:
                continue
            now = tree(root)
            if first is None:
                first = (time.monotonic(), now)
            last = (time.monotonic(), now)
            peak = max(peak, sum(gb for _, gb in now.values()))
        err = proc.stderr.read().decode(errors="replace")
    if proc.returncode != 0 or first is None or last is None or last[0] <= first[0]:
        raise SystemExit(f"{runner}: exit {proc.returncode}, no window measured\n{err[-2000:]}")
    common = set(first[1]) & set(last[1])
    cpu = sum(last[1][p][0] - first[1][p][0] for p in common)
    return {"runner": runner, "cores": round(cpu / (last[0] - first[0]), 4), "peak_gb": round(peak, 2),
            "window_s": round(last[0] - first[0], 1), "processes": len(common)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scene", choices=["static", "moving"], default="static")
    ap.add_argument("--seconds", type=float, default=90.0)
    ap.add_argument("--skip", type=float, default=25.0, help="seconds after start left out (start-up, model loads)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.rounds < 1 or args.seconds < args.skip + 20:
        ap.error("--rounds must be at least 1 and --seconds at least --skip + 20")
    server = RtspServer(scene_clip(args.scene))
    server.start()
    runs = []
    try:
        for r in range(args.rounds):
            for runner in RUNNERS:
                row = measure(server.url, runner, args.seconds, args.skip)
                runs.append({"round": r + 1, **row})
                print(f"round {r + 1}, {runner}: {row['cores']:.3f} cores, peak {row['peak_gb']:.2f} GB "
                      f"({row['processes']} processes, {row['window_s']:g} s window)", flush=True)
    finally:
        server.kill()
    summary = {runner: {"cores_median": round(statistics.median(x["cores"] for x in runs if x["runner"] == runner), 4),
                        "peak_gb_median": round(statistics.median(x["peak_gb"] for x in runs if x["runner"] == runner),
                                                2)} for runner in RUNNERS}
    out = {"scene": args.scene, "seconds": args.seconds, "skip": args.skip, "runs": runs, "summary": summary}
    print(json.dumps(out))
    save_json(out, args.json)


if __name__ == "__main__":
    main()
