"""PreFM cost on one CPU thread: parameters and milliseconds per online step (one second of stream).

For the paper's two sizes, our small preset and the shipped checkpoint's configuration (weights do
not change the cost, so random ones are timed), it times ``OnlineParser.step`` (ring buffer + one
forward over the 10-s window) for PreFM and for the same network without future modeling, and prints
the ratio of the two measured in the same run. Times depend on the machine and its load; nothing is
asserted. Usage: ``python benchmarks/prefm.py [--steps N] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models import checkpoints, prefm  # noqa: E402
from models.prefm.modeling_prefm import PreFM, PreFMConfig, preset  # noqa: E402
from models.prefm.online import OnlineParser, clap_frame_bounds  # noqa: E402

SHIPPED = prefm.SHIPPED_CHECKPOINT


def time_steps(model: PreFM, steps: int, warmup: int = 5) -> float:
    """Median milliseconds of one ``OnlineParser.step`` over ``steps`` seconds of random features."""
    cfg = model.config
    rng = np.random.default_rng(0)
    parser = OnlineParser(model)
    times = []
    for t in range(warmup + steps):
        if cfg.audio_rate == "clap_maps":
            lo, hi = clap_frame_bounds(t)
            audio = rng.standard_normal((hi - lo, cfg.audio_dim)).astype(np.float32)
        else:
            audio = rng.standard_normal(cfg.audio_dim).astype(np.float32)
        visual = rng.standard_normal(cfg.visual_dim).astype(np.float32)
        st = rng.standard_normal(cfg.st_dim).astype(np.float32) if cfg.st_dim else None
        start = time.perf_counter()
        parser.step(audio, visual, st)
        if t >= warmup:
            times.append(1000.0 * (time.perf_counter() - start))
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    rows = []
    shipped = PreFMConfig.from_dict(checkpoints.read(SHIPPED)["config"]) if SHIPPED.is_file() else None
    configs = {name: preset(name) for name in ("paper_avvp", "paper_avel", "small")}
    if shipped is not None:  # the shipped default: small, real input sizes, recency encodings
        configs["shipped"] = shipped
    for name, cfg in configs.items():
        prefm = PreFM(replace(cfg, use_future=True)).eval()
        ablation = PreFM(replace(cfg, use_future=False)).eval()
        ms, ms_ref = time_steps(prefm, a.steps), time_steps(ablation, a.steps)
        rows.append({"preset": name, "params_M": prefm.num_parameters() / 1e6,
                     "params_with_teacher_proj_M": prefm.num_parameters(inference_only=False) / 1e6,
                     "params_nofuture_M": ablation.num_parameters() / 1e6,
                     "ms_per_step": ms, "ms_per_step_nofuture": ms_ref, "ratio_vs_nofuture": ms / ms_ref,
                     "realtime_factor": 1000.0 / ms})
    if a.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"torch {torch.__version__}, 1 thread, median of {a.steps} online steps (1 step = 1 s of stream)")
    print(f"{'preset':<11} | {'params M':>8} | {'+teacher':>8} | {'ms/step':>7} | {'no-future ms':>12} | {'ratio':>5} | {'x realtime':>10}")
    for r in rows:
        print(f"{r['preset']:<11} | {r['params_M']:8.2f} | {r['params_with_teacher_proj_M']:8.2f} | {r['ms_per_step']:7.2f} | "
              f"{r['ms_per_step_nofuture']:12.2f} | {r['ratio_vs_nofuture']:5.2f} | {r['realtime_factor']:10.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
