"""Per-stage profile of a long clip, with ratios against references measured in the same run.

Builds (once, under /tmp) a 720p30 H.264 clip with audio of `--minutes` minutes by looping the demo clip with
ffmpeg, then measures, back to back:

- bare decode: `ffmpeg -i clip -f null -` (the reference of the analyze-vs-decode ratios);
- `foresight analyze` with the full default stack, and with `--no-visual` (speech + tags): wall time, the ratio
  to bare decode, and the result's `timings.stages` (seconds per stage) for the full stack;
- the full stack once more on the Ray actor runner (`--runner ray`; a file runs inline by default);
- the short demo clip: cold CLI wall (process start to JSON written), the first and second analysis in one
  process (models loading, then loaded), and through a real `foresight serve`: upload to result, four
  uploads one after another (the first one's worker loads the models; the median of the other three is the
  warm server);
- the time to fail on a refused URL;
- the CPU seconds (user + system) of the decode, the two file analyses and the cold CLI: divided by the cores
  and the bare decode they give the lowest ratio that run's work allows on this machine, however well spread.

With `--write docs/performance.md` the tables go into that page (dated, machine named, load noted).

    python benchmarks/profile_stages.py --minutes 5 --write docs/performance.md
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEMO = ROOT / "data" / "demo.mp4"


def long_clip(minutes: float) -> Path:
    path = Path(tempfile.gettempdir()) / f"foresight_profile_{minutes:g}min_720p.mp4"
    if not path.exists():
        loops = int(minutes * 60 / 20) + 1
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-stream_loop", str(loops), "-i", str(DEMO),
                        "-t", str(minutes * 60), "-vf", "scale=1280:720,fps=30", "-c:v", "libx264", "-preset", "veryfast",
                        "-c:a", "aac", "-ar", "44100", str(path)], check=True)
    return path


CPU_S: dict[str, float] = {}  # command's first words -> CPU seconds (user + system) of its last run


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


LAST_STDERR: list[str] = []  # the last lines the latest timed command wrote to stderr, for a failure's message


def timed(cmd: list[str], label: str | None = None) -> tuple[float, int]:
    """Wall seconds and exit status of `cmd`; its CPU seconds (user + system, the children it waited for) go
    into CPU_S[label] when a label is given."""
    cpu0, t0 = child_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    if label:
        CPU_S[label] = child_cpu() - cpu0
    LAST_STDERR[:] = proc.stderr.splitlines()[-15:]
    return wall, proc.returncode


def analyze(clip: Path, *flags: str) -> tuple[float, dict]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        wall, code = timed([sys.executable, "-m", "app.cli", "analyze", str(clip), "--out", str(out), "-q", *flags],
                           label=" ".join(flags) or "full")
        if code != 0:
            raise SystemExit(f"analyze {clip} {flags} exited {code}:\n" + "\n".join(LAST_STDERR))
        return wall, json.loads(out.read_text())


def warm_latency(clip: Path) -> tuple[float, float]:
    """First and second analysis of `clip` in one process (inline runner, models kept): cold-in-process, warm."""
    code = ("import sys, time; from pipelines import analyze_inline\n"
            "t=time.perf_counter(); analyze_inline(sys.argv[1]); a=time.perf_counter()-t\n"
            "t=time.perf_counter(); analyze_inline(sys.argv[1]); b=time.perf_counter()-t\n"
            "print(a, b)")
    out = subprocess.run([sys.executable, "-c", code, str(clip)], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    first, second = map(float, out.stdout.split()[-2:])
    return first, second


def rest_latency(clip: Path, runs: int = 4) -> list[float]:
    """Seconds from upload to a finished job for `runs` uploads of `clip`, one after another, through a real
    `foresight serve` on a free loopback port."""
    import httpx

    from benchmarks.api_load import start_server

    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(Path(tmp), free_port(), max_queue=4)
        url = f"http://127.0.0.1:{server.args[server.args.index('--port') + 1]}"
        try:
            turnaround = []
            with httpx.Client(base_url=url, timeout=300) as client:
                for _ in range(runs):
                    t0 = time.perf_counter()
                    r = client.post("/v1/analyze", files={"file": (clip.name, clip.read_bytes(), "video/mp4")})
                    r.raise_for_status()
                    job = r.json()["job_id"]
                    while (status := client.get(f"/v1/jobs/{job}").json())["status"] not in ("done", "failed"):
                        time.sleep(0.05)
                    turnaround.append(time.perf_counter() - t0)
                    if status["status"] != "done":  # a failed job's turnaround is not a latency
                        raise SystemExit(f"upload {len(turnaround)} failed: {status.get('error')}")
            return turnaround
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=60)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--write", metavar="MD", help="write the tables into this Markdown page")
    args = ap.parse_args()
    clip = long_clip(args.minutes)
    load_before = os.getloadavg()
    decode, _ = timed(["ffmpeg", "-nostdin", "-v", "error", "-i", str(clip), "-f", "null", "-"], label="decode")
    full_wall, full = analyze(clip)
    novis_wall, novis = analyze(clip, "--no-visual")
    ray_wall, _ = analyze(clip, "--runner", "ray")
    cold, _ = timed([sys.executable, "-m", "app.cli", "analyze", str(DEMO), "--out", os.devnull, "-q"], label="cold")
    first, warm = warm_latency(DEMO)
    rest = rest_latency(DEMO)
    rest_warm = sorted(rest[1:])[len(rest[1:]) // 2]
    refused, code = timed([sys.executable, "-m", "app.cli", "analyze", f"rtsp://127.0.0.1:{free_port()}/x", "-q"])
    load_after = os.getloadavg()

    lines = []
    add = lines.append
    add(f"Measured {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC on {platform.node()} "
        f"({os.cpu_count()} CPUs, {platform.processor() or platform.machine()}), load average "
        f"{load_before[0]:.1f} before and {load_after[0]:.1f} after: absolute seconds are only comparable within "
        "this run; the ratios against the references measured in the same run are what to read.")
    add("")
    add(f"Clip: {args.minutes:g} min 720p30 H.264 + AAC (the demo clip looped). Bare decode "
        f"(`ffmpeg -f null`): **{decode:.1f} s**.")
    add("")
    def floor(label: str) -> str:  # the wall time the run's CPU seconds need at the least on this machine's cores
        return f"{CPU_S[label]:.1f} | {CPU_S[label] / (os.cpu_count() or 1) / decode:.2f}"

    add("| run | wall (s) | ÷ bare decode | target | CPU (s) | CPU ÷ cores ÷ bare decode |")
    add("| --- | ---: | ---: | ---: | ---: | ---: |")
    add(f"| bare decode (`ffmpeg -f null`) | {decode:.1f} | 1.00 | | {floor('decode')} |")
    add(f"| `analyze` full default stack | {full_wall:.1f} | {full_wall / decode:.2f} | ≤ 2.0 | {floor('full')} |")
    add(f"| `analyze --no-visual` (speech + tags) | {novis_wall:.1f} | {novis_wall / decode:.2f} | ≤ 1.3 | "
        f"{floor('--no-visual')} |")
    add(f"| `analyze --runner ray` full stack on Ray actors | {ray_wall:.1f} | {ray_wall / decode:.2f} | | | |")
    add(f"| demo clip (20 s), cold CLI, start to JSON | {cold:.1f} | | ≤ 8 s | {CPU_S['cold']:.1f} | |")
    add(f"| demo clip, first in a process (inline, models loading) | {first:.1f} | | | | |")
    add(f"| demo clip, second in that process (models loaded) | {warm:.1f} | | | | |")
    add(f"| demo clip through `foresight serve`, upload to result, first upload | {rest[0]:.1f} | | | | |")
    add(f"| demo clip through `foresight serve`, warm (median of the next {len(rest) - 1}) | {rest_warm:.1f} | | ≤ 3 s | | |")
    add(f"| refused `rtsp://` URL, exit {code} | {refused:.2f} | | ≤ 3 s | | |")
    add("")
    add(f"Where the full stack's time goes (`timings.stages` of that run; wall {full['timings']['wall_s']:.1f} s inside "
        "the pipeline; the default runner for a file is inline, its nodes run concurrently on threads):")
    add("")
    add("| stage | seconds | share of pipeline wall | parts |")
    add("| --- | ---: | ---: | --- |")
    pipe_wall = full["timings"]["wall_s"]
    detail = full["timings"].get("stages_detail", {})
    for key, seconds in sorted(full["timings"]["stages"].items(), key=lambda kv: -kv[1]):
        name = key[:-2]
        parts = ", ".join(f"{k[:-2]} {v:.1f}" for k, v in sorted(detail.get(name, {}).items(), key=lambda kv: -kv[1]))
        add(f"| {name} | {seconds:.1f} | {100 * seconds / pipe_wall:.0f} % | {parts} |")
    table = "\n".join(lines)
    print(table)
    if args.write:
        page = Path(args.write)
        text = page.read_text() if page.exists() else "# Performance\n"
        marker = "<!-- profile_stages -->"
        block = f"{marker}\n{table}\n{marker}"
        if text.count(marker) == 2:
            head, _, rest = text.partition(marker)
            _, _, tail = rest.partition(marker)
            text = head + block + tail
        else:
            text = text.rstrip() + "\n\n## Profile (benchmarks/profile_stages.py)\n\n" + block + "\n"
        page.write_text(text)


if __name__ == "__main__":
    main()
