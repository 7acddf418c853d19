"""REST API under load: sustained uploads per minute and the latency of `GET /v1/jobs/{id}` meanwhile.

`--uploaders` clients each upload a short clip, wait for its result and upload again (a closed loop, so the
rate measured is what the server sustains, not what we offer); `--pollers` clients poll the status of the
jobs in flight as fast as they can. Reported: completed uploads per minute, 429 refusals, job turnaround
p50/p95, and GET /v1/jobs/{id} p50/p95/p99 (ms). Starts its own `foresight serve` unless `--url` is given.

    python benchmarks/api_load.py --seconds 120 --uploaders 4 --pollers 4
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from training.media.synth import RATE, ClipSpec, place, speak, tone, write_clip  # noqa: E402


def build_clip(path: Path, seconds: float) -> Path:
    """Speech, then a tone: exercises ASR and the tagger like a real short clip."""
    track = np.zeros(int(seconds * RATE), np.float32)
    place(track, speak("Please check the front door."), 0.5)
    place(track, tone(880, 1.0), seconds - 1.5)
    write_clip(path, ClipSpec(seconds, 15, 320, 180, lambda t: np.full((180, 320, 3), int(20 * t) % 255, np.uint8),
                              track))
    return path


def start_server(folder: Path, port: int, max_queue: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "app.server", "--db", str(folder / "f.db"), "--port", str(port),
           "--max-queue", str(max_queue)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True)
    deadline = time.time() + 180
    while time.time() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGKILL)
    raise TimeoutError("server did not start")


def run(url: str, clip: Path, seconds: float, uploaders: int, pollers: int, headers: dict) -> dict:
    data = clip.read_bytes()
    stop = time.monotonic() + seconds
    lock = threading.Lock()
    inflight: list[str] = []
    turnaround: list[float] = []
    gets: list[float] = []
    counts = {"accepted": 0, "completed": 0, "failed": 0, "refused_429": 0, "other_errors": 0}

    def uploader() -> None:
        with httpx.Client(base_url=url, headers=headers, timeout=120) as c:
            while time.monotonic() < stop:
                t0 = time.monotonic()
                r = c.post("/v1/analyze", files={"file": (clip.name, data, "video/mp4")})
                if r.status_code == 429:
                    with lock:
                        counts["refused_429"] += 1
                    time.sleep(1.0)
                    continue
                if r.status_code != 202:
                    with lock:
                        counts["other_errors"] += 1
                    continue
                job = r.json()["job_id"]
                with lock:
                    counts["accepted"] += 1
                    inflight.append(job)
                while True:
                    status = c.get(f"/v1/jobs/{job}").json()["status"]
                    if status in ("done", "failed"):
                        break
                    time.sleep(0.25)
                with lock:  # a job finishing after the window still counts: it was accepted inside it
                    inflight.remove(job)
                    counts["completed" if status == "done" else "failed"] += 1
                    turnaround.append(time.monotonic() - t0)

    def poller() -> None:
        with httpx.Client(base_url=url, headers=headers, timeout=30) as c:
            while time.monotonic() < stop:
                with lock:
                    job = inflight[len(gets) % len(inflight)] if inflight else None
                if job is None:
                    time.sleep(0.05)
                    continue
                t0 = time.perf_counter()
                r = c.get(f"/v1/jobs/{job}")
                dt = time.perf_counter() - t0
                if r.status_code == 200:
                    with lock:
                        gets.append(dt)

    threads = [threading.Thread(target=uploader) for _ in range(uploaders)]
    threads += [threading.Thread(target=poller) for _ in range(pollers)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    g = np.asarray(gets) * 1000 if gets else np.zeros(1)
    ta = np.asarray(turnaround) if turnaround else np.zeros(1)
    return {
        "seconds": round(elapsed, 1), "uploaders": uploaders, "pollers": pollers, **counts,
        "uploads_per_minute": round(counts["completed"] / elapsed * 60, 1),
        "clip_seconds_per_minute": None,
        "turnaround_s": {"p50": round(float(np.percentile(ta, 50)), 2), "p95": round(float(np.percentile(ta, 95)), 2)},
        "get_job_ms": {"n": len(gets), "p50": round(float(np.percentile(g, 50)), 2),
                       "p95": round(float(np.percentile(g, 95)), 2), "p99": round(float(np.percentile(g, 99)), 2)},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", help="an existing server (default: start one on a free port)")
    ap.add_argument("--api-key")
    ap.add_argument("--seconds", type=float, default=120.0)
    ap.add_argument("--uploaders", type=int, default=4)
    ap.add_argument("--pollers", type=int, default=4)
    ap.add_argument("--clip-seconds", type=float, default=6.0)
    ap.add_argument("--max-queue", type=int, default=32)
    ap.add_argument("--out", help="also write the numbers as JSON here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        clip = build_clip(folder / "load.mp4", args.clip_seconds)
        proc, url = None, args.url
        if url is None:
            import socket
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            proc = start_server(folder, port, args.max_queue)
            url = f"http://127.0.0.1:{port}"
        try:
            stats = run(url, clip, args.seconds, args.uploaders, args.pollers,
                        {"X-API-Key": args.api_key} if args.api_key else {})
        finally:
            if proc is not None:
                os.killpg(proc.pid, signal.SIGINT)
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
    stats["clip_seconds_per_minute"] = round(stats["uploads_per_minute"] * args.clip_seconds, 1)
    stats["clip_s"] = args.clip_seconds
    print(json.dumps(stats, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(stats, indent=2) + "\n")


if __name__ == "__main__":
    main()
