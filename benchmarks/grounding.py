"""Query latency of the grounding index over one hour of stored per-second features, on one core.

Usage: python benchmarks/grounding.py [--checkpoint CKPT] [--hours 1] [--queries 30] [--json]

Stores `hours * 3600` seconds as 60-s sources of random features with the model's dims (latency
does not depend on what the weights learned; a checkpoint only sets the dims and model size), then
times `GroundingIndex.search` end to end (MiniLM query embedding + coarse cosine over all windows +
full model on the candidate contexts), and for comparison a brute-force `Grounder.ground` sweep of a
single one-hour clip. The process is pinned to one CPU with one torch thread.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models.trisense.features import ClipFeatures  # noqa: E402
from models.trisense.grounder import Grounder  # noqa: E402
from models.trisense.modeling_trisense import TriSenseConfig, TriSenseModel  # noqa: E402
from pipelines.sinks.grounding_index import GroundingIndex  # noqa: E402

QUERIES = [
    "someone asks for a password", "a dog barks while a car passes", "the moment the alarm starts",
    "glass shatters", "a person waves at the camera", "they talk about the weather", "the lights go off",
    "a phone rings", "people clap", "someone falls down",
]


def random_clip(rng: np.random.Generator, dims: dict[str, int], seconds: int) -> ClipFeatures:
    speech = rng.standard_normal((seconds, dims["speech"])).astype(np.float32)
    speech /= np.linalg.norm(speech, axis=1, keepdims=True)
    return ClipFeatures(
        visual=rng.standard_normal((seconds, dims["visual"])).astype(np.float32),
        audio=rng.standard_normal((seconds, dims["audio"])).astype(np.float32),
        speech=speech, speech_mask=rng.random(seconds) < 0.4,
        transcript=[{"start": 1.0, "end": 4.0, "text": "hello and welcome"}],
    )


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", help="trained grounder (.pt); default: an untrained default-size model")
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--source-seconds", type=int, default=60)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    torch.set_num_threads(1)

    if args.checkpoint:
        grounder = Grounder.load(args.checkpoint)
    else:
        torch.manual_seed(0)
        grounder = Grounder(TriSenseModel(TriSenseConfig()))
    grounder.embed_query("warm up")  # load MiniLM outside the timings
    rng = np.random.default_rng(0)
    total_s = int(args.hours * 3600)
    n_sources = max(1, total_s // args.source_seconds)

    with tempfile.TemporaryDirectory() as tmp:
        index = GroundingIndex(Path(tmp) / "grounding.db", grounder)
        t0 = time.perf_counter()
        for k in range(n_sources):
            index.add(f"src{k:04d}", random_clip(rng, grounder.dims, args.source_seconds))
        add_s = time.perf_counter() - t0
        index.search(QUERIES[0])  # fill the window cache
        lat = []
        for i in range(args.queries):
            t = time.perf_counter()
            hits = index.search(QUERIES[i % len(QUERIES)], top_k=5)
            lat.append(1000 * (time.perf_counter() - t))
        assert hits, "search returned nothing"
        one = []
        for i in range(min(10, args.queries)):
            t = time.perf_counter()
            index.search(QUERIES[i % len(QUERIES)], top_k=5, source_ids=["src0000"])
            one.append(1000 * (time.perf_counter() - t))
        db_mb = (Path(tmp) / "grounding.db").stat().st_size / 1e6
        index.close()

    long_clip = random_clip(rng, grounder.dims, total_s)
    t = time.perf_counter()
    grounder.ground(QUERIES[0], long_clip, top_k=5)
    sweep_ms = 1000 * (time.perf_counter() - t)

    result = {
        "stored_seconds": n_sources * args.source_seconds, "sources": n_sources,
        "model_params": sum(p.numel() for p in grounder.model.parameters()),
        "index_build_s": round(add_s, 2), "db_mb": round(db_mb, 1),
        "search_all_ms": {"median": round(statistics.median(lat), 1), "p95": round(percentile(lat, 95), 1),
                          "max": round(max(lat), 1)},
        "search_one_source_ms_median": round(statistics.median(one), 1),
        "brute_force_sweep_one_hour_clip_ms": round(sweep_ms, 1),
        "target_ms": 200,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
