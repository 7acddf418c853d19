"""Ray's idle CPU floor: what a local cluster from `ensure_ray` burns with N live actors that do nothing, by
process, and which threads of one idle actor burn it (per-thread CPU and wake-ups from /proc). A still camera
pays this before any model runs: the pipeline keeps an ingest actor per stream and two stage hosts (issue 30's
static-scene target is 0.10 cores a stream). Each round is a fresh interpreter.

    python -m benchmarks.ray_idle_cpu [--actors 3] [--seconds 30] [--rounds 2] [--env RAY_X=V ...]
        [--json docs/results/ray_idle_cpu.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from benchmarks._report import save_json

ROOT = Path(__file__).resolve().parents[1]

PROBE = r"""
import json, os, sys, time, psutil, ray
from pipelines.spine.runtime import ensure_ray
n, seconds = int(sys.argv[1]), float(sys.argv[2])
ensure_ray(num_cpus=2)

@ray.remote(num_cpus=0)
class Idle:
    def pid(self):
        return os.getpid()

actors = [Idle.remote() for _ in range(n)]
pids = ray.get([a.pid.remote() for a in actors])
time.sleep(5)  # start-up work done
tck = os.sysconf("SC_CLK_TCK")

def cpu(p):
    try:
        t = p.cpu_times()
        return t.user + t.system
    except psutil.Error:
        return 0.0

def threads(pid):
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = open(f"/proc/{pid}/task/{tid}/stat").read()
            status = open(f"/proc/{pid}/task/{tid}/status").read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        wakes = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("voluntary_ctxt"))
        out[tid] = (stat[stat.index("(") + 1:stat.rindex(")")], (int(fields[11]) + int(fields[12])) / tck, wakes)
    return out

me = psutil.Process()
procs = {p.pid: p for p in me.children(recursive=True)}
names = {}
for pid, p in procs.items():
    try:
        cmd = p.cmdline()
        names[pid] = cmd[0] if cmd and cmd[0].startswith("ray::") else p.name()
    except psutil.Error:
        names[pid] = "?"
c0, th0, t0 = {pid: cpu(p) for pid, p in procs.items()}, threads(pids[0]), time.monotonic()
time.sleep(seconds)
wall = time.monotonic() - t0
by_process = {}
for pid, p in procs.items():
    by_process[names[pid]] = by_process.get(names[pid], 0.0) + (cpu(p) - c0[pid]) / wall
th1 = threads(pids[0])
rows = []
for tid, (name, t, w) in th1.items():
    _, t_0, w_0 = th0.get(tid, (name, 0.0, 0))
    rows.append({"thread": name, "cores": round((t - t_0) / wall, 4), "wakeups_per_s": round((w - w_0) / wall, 1)})
rows.sort(key=lambda r: (-r["cores"], -r["wakeups_per_s"]))
print(json.dumps({"by_process": {k: round(v, 4) for k, v in by_process.items()},
                  "total": round(sum(by_process.values()), 4), "one_actor_threads": rows[:6]}))
"""


def one_round(actors: int, seconds: float, settings: dict[str, str]) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, str(actors), str(seconds)], cwd=ROOT, capture_output=True,
                         text=True, timeout=seconds + 120, env={**os.environ, **settings, "PYTHONPATH": str(ROOT)})
    if out.returncode != 0:
        raise SystemExit(f"probe failed: {out.stderr.strip()[-400:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--actors", type=int, default=3, help="idle actors (the pipeline keeps 3 for one stream)")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--env", action="append", default=[], metavar="RAY_X=V",
                    help="a Ray setting for the cluster's processes (repeatable), to try against the default")
    ap.add_argument("--json", type=Path, help="write every round here")
    args = ap.parse_args()
    if args.actors < 1 or args.seconds <= 0 or args.rounds < 1:
        ap.error("--actors and --rounds must be at least 1, --seconds positive")
    if any("=" not in e or not e.startswith("RAY_") for e in args.env):
        ap.error("--env takes RAY_NAME=VALUE")
    settings = dict(e.split("=", 1) for e in args.env)
    rounds = []
    for i in range(args.rounds):
        r = one_round(args.actors, args.seconds, settings)
        rounds.append(r)
        actor_share = r["by_process"].get("ray::Idle", 0.0)
        main_thread = next((t for t in r["one_actor_threads"] if t["thread"] == "ray::Idle"), None)
        print(f"round {i + 1}: {r['total']:.4f} cores in all, {actor_share / args.actors:.4f} an idle actor; "
              f"by process {r['by_process']}; one actor's main thread {main_thread}", flush=True)
    totals = [r["total"] for r in rounds]
    per_actor = [r["by_process"].get("ray::Idle", 0.0) / args.actors for r in rounds]
    summary = {"actors": args.actors, "seconds": args.seconds, "settings": settings, "total_median": round(statistics.median(totals), 4),
               "per_actor_median": round(statistics.median(per_actor), 4), "rounds": rounds}
    print(json.dumps({k: v for k, v in summary.items() if k != "rounds"}))
    save_json(summary, args.json)


if __name__ == "__main__":
    main()
