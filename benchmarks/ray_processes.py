"""What a local Ray cluster from `ensure_ray` keeps resident: each process's RSS and the total, with Ray's
dashboard head and agent and the autoscaler and log monitors left out (the default) or started
(`FORESIGHT_RAY_DASHBOARD=1`), in alternating fresh interpreters so machine load hits both alike.

    python -m benchmarks.ray_processes [--pairs 2] [--json docs/results/ray_processes.json]
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
import json, os, time, psutil, ray
from pipelines.spine.runtime import ensure_ray
t0 = time.perf_counter()
ensure_ray(num_cpus=1)
init_s = time.perf_counter() - t0

@ray.remote
def env():
    return os.environ.get("PROBE_VALUE"), os.environ.get("OMP_NUM_THREADS")

assert ray.get(ray.remote(lambda: 41).remote()) == 41
seen = ray.get(env.options(runtime_env={"env_vars": {"PROBE_VALUE": "set by runtime_env"}}).remote())
time.sleep(2)
procs = []
for p in psutil.Process().children(recursive=True):
    try:
        procs.append({"name": p.name(), "cmd": " ".join(p.cmdline()), "mb": round(p.memory_info().rss / 2**20, 1)})
    except psutil.Error:
        pass
print(json.dumps({"init_s": round(init_s, 3), "runtime_env": seen, "procs": procs}))
ray.shutdown()
"""
PARTS = ("dashboard/dashboard.py", "autoscaler", "log_monitor.py", "pipelines.spine.reaper")


def label(proc: dict) -> str:
    """A process by what it runs: the script for Ray's Python daemons (in the first arguments), else its name."""
    head = " ".join(proc["cmd"].split()[:4])
    return next((part for part in PARTS if part in head), proc["name"])


def probe(opt_in: bool) -> dict:
    """A fresh interpreter's local Ray (a task with a `runtime_env` run first): `init_s`, what the runtime_env
    task saw, and each process of the driver's tree (name, command line, resident MB); `total_mb` their sum."""
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "FORESIGHT_RAY_DASHBOARD")}
    env.update(PYTHONPATH=str(ROOT), **({"FORESIGHT_RAY_DASHBOARD": "1"} if opt_in else {}))
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    found = json.loads(out.stdout.strip().splitlines()[-1])
    found["total_mb"] = round(sum(p["mb"] for p in found["procs"]), 1)
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    runs: dict[str, list[dict]] = {"default": [], "FORESIGHT_RAY_DASHBOARD=1": []}
    for _ in range(args.pairs):
        runs["default"].append(probe(False))
        runs["FORESIGHT_RAY_DASHBOARD=1"].append(probe(True))
    print(f"{'cluster':<28} {'resident MB (each run)':<26} {'ray.init s':<14} processes")
    for name, rs in runs.items():
        print(f"{name:<28} {', '.join(str(r['total_mb']) for r in rs):<26} "
              f"{', '.join(str(r['init_s']) for r in rs):<14} {len(rs[0]['procs'])}")
    base = statistics.median(r["total_mb"] for r in runs["FORESIGHT_RAY_DASHBOARD=1"])
    lean = statistics.median(r["total_mb"] for r in runs["default"])
    print(f"default / opt-in resident: {lean / base:.2f}")
    for proc in runs["FORESIGHT_RAY_DASHBOARD=1"][0]["procs"]:
        print(f"  opt-in: {label(proc):<40} {proc['mb']} MB")
    save_json(runs, args.json)


if __name__ == "__main__":
    main()
