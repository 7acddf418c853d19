"""TIRE in miniature: track, inpaint progressively from the subject view, re-splat; versus one-shot.

Each subject is a Gaussian-splat sphere wearing a scikit-image photograph, wrapped once around it and
mirrored, so its unseen back differs from its seen front but joins it without a seam. The generator's
initial asset is blurry and generic on the side the source view does not show. TIRE completes views in the
paper's stages (+-20 deg, +-90 deg, 180 deg), carrying colours along backward tracks into the source and
every view completed before and inpainting the untracked pixels with an inpainter fitted to the source view
only, then re-splats. The ablation inpaints the same views in one shot against the source alone. Novel views
(none of them completed) are scored by PSNR over the subject's silhouette against the ground truth; the
source view's PSNR checks that the seen side is kept. A control runs the old band subjects (one photo
column, the same from every azimuth), on which view consistency cannot matter.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from training.methods.runner import Experiment, Result
from training.methods.tire.pipeline import agreement_psnr, psnr, tire_edit
from training.methods.tire.splats import Camera, splat
from training.methods.tire.subject import generator_guess, photo_texture, subject_scene

SUBJECTS = ("astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry")
# The photographs the texture setting was chosen on; never reported.
DEV_SUBJECTS = ("retina", "hubble_deep_field", "colorwheel", "logo")


@dataclass(frozen=True)
class Config:
    subjects: tuple[str, ...] = SUBJECTS
    gaussians: int = 1000
    size: int = 40
    stages: tuple[tuple[float, ...], ...] = ((20.0, -20.0), (90.0, -90.0), (180.0,))
    novel: tuple[float, ...] = (40.0, -40.0, 60.0, -60.0, 120.0, -120.0, 150.0, -150.0)
    columns: int = 2  # photo columns from the front (0 deg) to the back (180 deg); 1 = latitude bands
    control: bool = True  # also run the band subjects (columns = 1)
    top: int = 5  # the inpainter's candidates averaged per pixel
    source_weight: float = 100.0  # the source view's weight in the re-splat (TIRE freezes the source latents)


class Scorer:
    """PSNR of any colours over the subject's silhouette against the ground truth, per view; the truth's
    views are splatted once (the geometry is shared, so they fit every scene)."""

    def __init__(self, truth, azimuths: tuple[float, ...], size: int) -> None:
        self.truth = truth
        self.views = {az: splat(truth, Camera(az, size=size)) for az in azimuths}

    def __call__(self, scene, azimuths) -> float:
        return float(np.mean([psnr(v.image(scene.colours), v.image(self.truth.colours), v.alpha > 0.5)
                              for v in (self.views[az] for az in azimuths)]))

    def front_back(self) -> float:
        """How much the subject's back looks like its front: PSNR between its 180 and 0 deg renders."""
        front, back = self.views[0.0], self.views[180.0]
        return psnr(back.image(self.truth.colours), front.image(self.truth.colours), front.alpha > 0.5)


def run_subject(name: str, cfg: Config, columns: int | None = None) -> dict:
    """One subject: novel-view and source-view PSNR of the initial asset, TIRE and the one-shot ablation."""
    columns = cfg.columns if columns is None else columns
    truth = subject_scene(cfg.gaussians, photo_texture(name, shape=(48, columns)), mirror=True)
    source = Camera(0.0, size=cfg.size)
    score = Scorer(truth, (0.0, 180.0, *cfg.novel), cfg.size)
    initial = generator_guess(truth, source)
    photo = score.views[0.0].image(truth.colours)
    stages = [list(s) for s in cfg.stages]
    staged, log = tire_edit(initial, source, photo, stages, progressive=True, top=cfg.top,
                            source_weight=cfg.source_weight)
    oneshot, log1 = tire_edit(initial, source, photo, stages, progressive=False, top=cfg.top,
                              source_weight=cfg.source_weight)
    back = [az for az in cfg.novel if abs(az) > 90]
    row = {"subject": name, "texture": "wrapped photo" if columns > 1 else "bands (control)",
           "front~back dB": score.front_back()}
    for label, scene in (("initial", initial), ("TIRE staged", staged), ("one-shot", oneshot)):
        row[f"novel PSNR {label}"] = score(scene, cfg.novel)
    for label, scene in (("TIRE staged", staged), ("one-shot", oneshot)):
        row[f"back PSNR {label}"] = score(scene, back)
    row["view agreement TIRE staged"] = agreement_psnr(staged, log.anchors)
    row["view agreement one-shot"] = agreement_psnr(oneshot, log1.anchors)
    for label, scene in (("initial", initial), ("TIRE staged", staged)):
        row[f"source PSNR {label}"] = score(scene, [0.0])
    row["inpainted px"] = f"{sum(log.masked)} / {sum(log1.masked)}"
    return row


def _with_mean(rows: list[dict]) -> list[dict]:
    keys = [k for k, v in rows[0].items() if isinstance(v, float)]
    mean = {k: float(np.mean([r[k] for r in rows])) for k in keys}
    return rows + [{"subject": "mean", "texture": rows[0]["texture"], **mean}]


def run_config(cfg: Config, seed: int = 0, progress=None) -> Result:
    torch.manual_seed(seed)
    jobs = [(name, cfg.columns) for name in cfg.subjects]
    if cfg.control:
        jobs += [(name, 1) for name in cfg.subjects]
    loop = jobs if progress is None else progress(jobs, desc="subjects", total=len(jobs))
    done = [run_subject(name, cfg, columns) for name, columns in loop]
    main = _with_mean(done[:len(cfg.subjects)])
    rows = main + (_with_mean(done[len(cfg.subjects):]) if cfg.control else [])
    mean = main[-1]
    gain = mean["novel PSNR TIRE staged"] - mean["novel PSNR initial"]
    vs_oneshot = mean["novel PSNR TIRE staged"] - mean["novel PSNR one-shot"]
    wins = sum(r["novel PSNR TIRE staged"] > r["novel PSNR one-shot"] for r in main[:-1])
    figures = {"novel_psnr_initial": mean["novel PSNR initial"], "novel_psnr_tire": mean["novel PSNR TIRE staged"],
               "novel_psnr_oneshot": mean["novel PSNR one-shot"], "gain_db": gain, "staged_minus_oneshot_db": vs_oneshot,
               "staged_wins": float(wins),
               "agreement_staged_minus_oneshot_db": mean["view agreement TIRE staged"] - mean["view agreement one-shot"],
               "source_psnr_drop_db": mean["source PSNR initial"] - mean["source PSNR TIRE staged"]}
    if cfg.control:
        control = rows[-1]
        figures["control_staged_minus_oneshot_db"] = control["novel PSNR TIRE staged"] - control["novel PSNR one-shot"]
    checks = {"novel-view PSNR gain >= 3 dB over the initial asset (mean over subjects)": gain >= 3.0,
              "staged inpainting beats one-shot (mean novel-view PSNR, and on at least half the subjects)":
                  vs_oneshot > 0 and 2 * wins >= len(main) - 1,
              "source view kept (PSNR within 0.5 dB of the initial asset or better)": figures["source_psnr_drop_db"] <= 0.5}
    notes = [f"staged beats one-shot on {wins} of {len(main) - 1} subjects (wrapped photo); the checks read the "
             "wrapped-photo rows only; the band rows are a control on which front and back are alike",
             "view agreement = PSNR of the re-splatted asset against the completed views it was fitted to: high when "
             "the completed views agree with each other; inpainted px = pixels inpainted, staged / one-shot",
             f"photo columns front to back {cfg.columns}; inpainter top-{cfg.top}; stages {list(cfg.stages)}; "
             f"novel views {list(cfg.novel)}; {cfg.gaussians} Gaussians, {cfg.size}x{cfg.size} px orthographic renders"]
    return Result(rows, figures, checks, notes)


def run(seed: int = 0, progress=None) -> Result:
    torch.set_num_threads(1)
    return run_config(Config(), seed, progress)


EXPERIMENT = Experiment(
    name="tire",
    title="TIRE: track, inpaint progressively, re-splat (subject-driven 3D completion)",
    paper="Zheng, Mirzaei, Gilitschenski, Track, Inpaint, Resplat: Subject-driven 3D and 4D Generation with "
          "Progressive Texture Infilling (NeurIPS 2025, arXiv 2510.23605)",
    claim="Inpainting the regions a source view does not explain, found by backward tracking, with a "
          "subject-driven inpainter, progressively from views near the source, then re-splatting, restores the "
          "subject's identity on unseen sides better than the generator and than one-shot inpainting.",
    run=run,
)
