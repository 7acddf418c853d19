"""What one second's Ray traffic costs in CPU: a `ray.put` of a second's segment, and an actor call of the kind
the ingest actor makes per node per second (with the segment's ref, with a small inline value, with nothing).

The ingest actor puts each second once and calls each node of the graph once (`pipelines/spine/actors.py`):
speech, audio, visual and ocr take the segment's ref, the others earlier nodes' small outputs. On a still camera
those calls are a real part of issue 30's 0.10 cores a stream. CPU is summed over the caller, the callee, raylet
and GCS, per operation; the modes alternate, each `--rounds` times.

    python -m benchmarks.ray_call_cost [--calls 500] [--rounds 2] [--json docs/results/ray_call_cost.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

import numpy as np
import psutil
import ray

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._report import save_json  # noqa: E402
from pipelines.spine.runtime import ensure_ray  # noqa: E402
from pipelines.stages.config import StageConfig  # noqa: E402

MODES = ("put", "call with the segment", "call with a small value", "bare call")


@ray.remote(num_cpus=0)
class Host:
    """A stage host whose stage does nothing: what remains is the call."""

    def process(self, node: str, stream: str, seq: int, config, *args) -> dict:
        return {"index": seq, "text": [], "available": False}

    def pid(self) -> int:
        return os.getpid()


@ray.remote(num_cpus=0)
class Caller:
    """The ingest actor's side: one second = one segment of two 640x360 frames and 1 s of 16 kHz audio."""

    def pid(self) -> int:
        return os.getpid()

    def run(self, host, calls: int, mode: str) -> None:
        config = StageConfig()
        segment = {"frames": [np.zeros((360, 640, 3), np.uint8)] * 2, "audio": np.zeros(16_000, np.float32)}
        ref = ray.put(segment)
        pending = []
        for i in range(calls):
            if mode == "put":
                ray.put(segment)
                continue
            args = {"call with the segment": (ref,), "call with a small value": ({"index": i, "tags": {"a": 0.5}},),
                    "bare call": ()}[mode]
            pending.append(host.process.remote("ocr", "s", i, config, *args))
            if len(pending) > 8:  # a few seconds in flight, as `Delivery` keeps them
                ray.get(pending.pop(0))
        ray.get(pending)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.calls < 1 or args.rounds < 1:
        ap.error("--calls and --rounds must be at least 1")
    ensure_ray()
    host, caller = Host.remote(), Caller.remote()
    pids = ray.get([host.pid.remote(), caller.pid.remote()])
    ray.get(caller.run.remote(host, 50, "call with the segment"))  # warm
    procs = [psutil.Process(p) for p in pids]
    procs += [p for p in psutil.Process().children(recursive=True) if p.name() in ("raylet", "gcs_server")]

    def cpu() -> float:
        return sum(sum(p.cpu_times()[:2]) for p in procs)

    ms: dict[str, list[float]] = {m: [] for m in MODES}
    for _ in range(args.rounds):
        for mode in MODES:
            before = cpu()
            ray.get(caller.run.remote(host, args.calls, mode))
            ms[mode].append((cpu() - before) / args.calls * 1000)
    rows = {m: {"ms_cpu_each": [round(v, 3) for v in vals], "median": round(statistics.median(vals), 3)}
            for m, vals in ms.items()}
    for mode, row in rows.items():
        print(f"{mode}: {row['median']:.2f} ms of CPU each (rounds: {', '.join(f'{v:.2f}' for v in row['ms_cpu_each'])})")
    out = {"calls": args.calls, "rounds": args.rounds, "modes": rows}
    print(json.dumps(out))
    save_json(out, args.json)


if __name__ == "__main__":
    main()
