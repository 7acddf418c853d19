"""TIRE's ceilings: how far perfect completed views would take the re-splat (docs/training/tire.md).

    python -m training.experiments.tire_ceiling --out docs/results/training/tire_ceiling.json

The shipped experiment's novel-view PSNR could be capped by the generator's geometry error (the re-splat only
re-colours the estimated Gaussians) or by what the tracker and inpainter put into the completed views. Two
oracles on each subject and seed of the shipped experiment tell these apart; neither is a method, both read the
true asset, and nothing is chosen on them:

* **perfect stages**: the re-splat of the shipped pipeline (same views: the source and the five staged
  azimuths, same weights: 100 for the source, 1 for the others, the half-transparent rim left out) fitted to
  the true asset's renders at those views instead of the completed ones: what TIRE would reach if tracking and
  inpainting were perfect (and whether the source view keeps its PSNR then);
* **all views**: the same fit to the true asset's renders every 10 degrees of azimuth (the eight scored novel
  views among them), weight 1 each: the best colours the estimated geometry can carry.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import torch

from training.methods.runner import progress_bar
from training.methods.tire.experiment import SEEDS, Config, subject_setup
from training.methods.tire.pipeline import Anchor, resplat, trusted_pixels
from training.methods.tire.splats import Camera, Splats, splat


def oracle(initial: Splats, truth: Splats, azimuths: Iterable[float], size: int, source_weight: float,
           trusted_rim: bool) -> Splats:
    """The estimated asset re-coloured to fit the true asset's renders at `azimuths` (the source, 0, first)."""
    anchors = []
    for az in azimuths:
        camera = Camera(float(az), size=size)
        view, true_view = splat(initial, camera), splat(truth, camera)
        pixels = trusted_pixels(view) if trusted_rim and az != 0 else torch.ones_like(view.alpha, dtype=torch.bool)
        weight = source_weight if az == 0 else 1.0
        anchors.append(Anchor(view, true_view.image(truth.colours), weight, pixels.float()))
    return resplat(initial, anchors)


def ceiling_row(name: str, cfg: Config, seed: int) -> dict:
    """Novel-view PSNR of the generator's asset and of the two oracles on one subject and geometry draw."""
    subject = subject_setup(name, cfg, seed)
    truth, score, initial = subject.truth, subject.score, subject.initial
    staged = [0.0, *(az for stage in cfg.stages for az in stage)]
    perfect = oracle(initial, truth, staged, cfg.size, cfg.source_weight, trusted_rim=True)
    every = oracle(initial, truth, range(-180, 180, 10), cfg.size, 1.0, trusted_rim=False)
    return {"subject": name, "seed": seed, "novel PSNR initial": score(initial, cfg.novel),
            "novel PSNR perfect stages": score(perfect, cfg.novel), "novel PSNR all views": score(every, cfg.novel),
            "source PSNR initial": score(initial, [0.0]), "source PSNR perfect stages": score(perfect, [0.0])}


def summarise(rows: list[dict], groups: dict[str, tuple[str, ...]]) -> dict[str, dict[str, float]]:
    """Per group: the mean over its subjects on each seed, then mean and sd over the seeds."""
    out = {}
    for group, names in groups.items():
        per_seed = {}
        for seed in sorted({r["seed"] for r in rows}):
            mine = [r for r in rows if r["subject"] in names and r["seed"] == seed]
            per_seed[seed] = {k: float(np.mean([r[k] for r in mine])) for k in mine[0] if "PSNR" in k}
        for key in ("perfect stages", "all views"):
            gains = np.array([s[f"novel PSNR {key}"] - s["novel PSNR initial"] for s in per_seed.values()])
            out.setdefault(group, {})[f"{key}: gain over initial dB"] = float(gains.mean())
            out[group][f"{key}: gain over initial dB sd"] = float(gains.std(ddof=1))
        for key in ("initial", "perfect stages", "all views"):
            out[group][f"novel PSNR {key}"] = float(np.mean([s[f"novel PSNR {key}"] for s in per_seed.values()]))
        drops = np.array([s["source PSNR initial"] - s["source PSNR perfect stages"] for s in per_seed.values()])
        out[group]["perfect stages: source PSNR drop dB"] = float(drops.mean())
        out[group]["perfect stages: source PSNR drop dB sd"] = float(drops.std(ddof=1))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("docs/results/training/tire_ceiling.json"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    cfg = Config()
    jobs = [(name, seed) for seed in SEEDS for names in cfg.groups.values() for name in names]
    rows = [ceiling_row(name, cfg, seed)
            for name, seed in progress_bar(sys.stderr.isatty())(jobs, desc="subjects", total=len(jobs))]
    summary = summarise(rows, cfg.groups)
    for group, figures in summary.items():
        print(group, "  ".join(f"{k} {v:.2f}" for k, v in figures.items()))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"command": "python -m training.experiments.tire_ceiling", "seeds": list(SEEDS),
                                    "groups": {g: list(n) for g, n in cfg.groups.items()}, "summary": summary,
                                    "rows": rows}, indent=1) + "\n")
    print(f"result written to {args.out}")


if __name__ == "__main__":
    main()
