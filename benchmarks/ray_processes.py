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

ROOT = Path(__file__).resolve().parents[1]

PROBE = r"""
import json, os, time, psutil, ray
from pipelines.spine.runtime import ensure_ray
t0 = time.perf_counter()
ensure_ray(num_cpus=1)
init_s = time.perf_counter() - t0
assert ray.get(ray.remote(lambda: 41).options(runtime_env={"env_vars": {"X": "1"}}).remote()) == 41
time.sleep(2)
procs = {}
for p in psutil.Process().children(recursive=True):
    try:
        name, head = p.name(), " ".join(p.cmdline()[:4])  # a script's path is in the first arguments
        for part in ("dashboard/dashboard.py", "autoscaler", "log_monitor.py", "pipelines.spine.reaper"):
            if part in head:
                name = part
        procs[f"{name} ({p.pid})"] = round(p.memory_info().rss / 2**20, 1)
    except psutil.Error:
        pass
print(json.dumps({"init_s": round(init_s, 3), "total_mb": round(sum(procs.values()), 1), "procs": procs}))
ray.shutdown()
"""


def probe(opt_in: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "FORESIGHT_RAY_DASHBOARD")}
    env.update(PYTHONPATH=str(ROOT), **({"FORESIGHT_RAY_DASHBOARD": "1"} if opt_in else {}))
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


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
    for name, mb in runs["FORESIGHT_RAY_DASHBOARD=1"][0]["procs"].items():
        print(f"  opt-in: {name:<40} {mb} MB")
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1) + "\n")


if __name__ == "__main__":
    main()
