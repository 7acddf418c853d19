"""TIRE in miniature: track, inpaint progressively from the subject view, re-splat; versus one-shot.

Each subject is a Gaussian-splat sphere wearing a scikit-image photograph, wrapped once around it and
mirrored, so its unseen back differs from its seen front but joins it without a seam. The generator's
initial asset, made from the source photo alone, has an estimated geometry (a seeded depth error) and is
blurry and generic on the side the photo does not show; the tracker, inpainter and re-splat see only that
asset and the photo. TIRE completes views in the
paper's stages (+-20 deg, +-90 deg, 180 deg), carrying colours along backward tracks into the source and
every view completed before and inpainting the untracked pixels with an inpainter fitted to the source view
only, then re-splats. The ablation inpaints the same views in one shot against the source alone. Novel views
(none of them completed) are scored by PSNR over the subject's silhouette against the ground truth; the
source view's PSNR checks that the seen side is kept. Subjects are split into validation (every photo a
setting was chosen on) and held-out test photos; seeds 0, 1, 2 draw the geometry error.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from training.methods.runner import Experiment, Result
from training.methods.tire.pipeline import agreement_psnr, psnr, tire_edit
from training.methods.tire.splats import Camera, Splats, splat
from training.methods.tire.subject import estimated_geometry, generator_guess, photo_texture, subject_scene

# Validation: every photograph any setting or variant was chosen or compared on (the earlier pages' reported
# five and development four).
VAL_SUBJECTS = ("astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry", "retina", "hubble_deep_field",
                "colorwheel", "logo")
# Held out: every other photograph bundled with scikit-image, except binary or synthetic images (horse,
# checkerboard, binary_blobs, the phantom), never run before this split was made. Split by their texture's
# colour sd (an input property, set before any run): those with almost none have no identity to restore.
TEST_SUBJECTS = ("camera", "clock", "coins", "page", "stereo_motorcycle")
TEST_FLAT_SUBJECTS = ("brick", "cell", "grass", "gravel", "microaneurysms", "moon", "text")
SEEDS = (0, 1, 2)


@dataclass(frozen=True)
class Config:
    groups: dict[str, tuple[str, ...]] = field(default_factory=lambda: {
        "val": VAL_SUBJECTS, "test": TEST_SUBJECTS, "test_flat": TEST_FLAT_SUBJECTS})
    gaussians: int = 1000
    size: int = 40
    stages: tuple[tuple[float, ...], ...] = ((20.0, -20.0), (90.0, -90.0), (180.0,))
    novel: tuple[float, ...] = (40.0, -40.0, 60.0, -60.0, 120.0, -120.0, 150.0, -150.0)
    columns: int = 2  # photo columns from the front (0 deg) to the back (180 deg); 1 = latitude bands
    top: int = 5  # the inpainter's candidates averaged per pixel
    source_weight: float = 100.0  # the source view's weight in the re-splat (TIRE freezes the source latents)
    # Attempt 3 (docs/training/tire.md), not shipped: the Gaussians the source shows keep their colours in the re-splat.
    freeze_seen: bool = False


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


@dataclass
class Subject:
    """What every run on one subject starts from: the true asset (for scoring only), the source camera, the
    scorer, the subject photo (all a method is given of the truth) and the generator's asset made from it."""

    truth: Splats
    source: Camera
    score: Scorer
    photo: torch.Tensor
    initial: Splats


def subject_setup(name: str, cfg: Config, seed: int, columns: int | None = None) -> Subject:
    """Subject `name` wrapped around the sphere (`columns` photo columns front to back), and the generator's
    asset on the geometry drawn with `seed`."""
    columns = cfg.columns if columns is None else columns
    truth = subject_scene(cfg.gaussians, photo_texture(name, shape=(48, columns)), mirror=True)
    source = Camera(0.0, size=cfg.size)
    score = Scorer(truth, (0.0, 180.0, *cfg.novel), cfg.size)
    photo = score.views[0.0].image(truth.colours)
    return Subject(truth, source, score, photo, generator_guess(estimated_geometry(truth, seed), source, photo))


def run_subject(name: str, cfg: Config, columns: int | None = None, seed: int = 0) -> dict:
    """One subject: novel-view and source-view PSNR of the initial asset, TIRE and the one-shot ablation. The
    method sees the source photo and the generator's asset (its geometry drawn with `seed`), never the truth."""
    columns = cfg.columns if columns is None else columns
    subject = subject_setup(name, cfg, seed, columns)
    source, score, photo, initial = subject.source, subject.score, subject.photo, subject.initial
    stages = [list(s) for s in cfg.stages]
    arms = {"top": cfg.top, "source_weight": cfg.source_weight, "freeze_seen": cfg.freeze_seen}
    staged, log = tire_edit(initial, source, photo, stages, progressive=True, **arms)
    oneshot, log1 = tire_edit(initial, source, photo, stages, progressive=False, **arms)
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


def _mean(rows: list[dict]) -> dict:
    keys = [k for k, v in rows[0].items() if isinstance(v, float)]
    return {k: float(np.mean([r[k] for r in rows])) for k in keys}


def group_figures(rows: list[dict]) -> dict[str, float]:
    """The headline figures of one seed on one group of subjects (means over its subjects)."""
    mean = _mean(rows)
    return {"novel_psnr_initial": mean["novel PSNR initial"], "novel_psnr_tire": mean["novel PSNR TIRE staged"],
            "novel_psnr_oneshot": mean["novel PSNR one-shot"],
            "gain_db": mean["novel PSNR TIRE staged"] - mean["novel PSNR initial"],
            "staged_minus_oneshot_db": mean["novel PSNR TIRE staged"] - mean["novel PSNR one-shot"],
            "back_staged_minus_oneshot_db": mean["back PSNR TIRE staged"] - mean["back PSNR one-shot"],
            "staged_win_share": float(np.mean([r["novel PSNR TIRE staged"] > r["novel PSNR one-shot"] for r in rows])),
            "agreement_staged_minus_oneshot_db": mean["view agreement TIRE staged"] - mean["view agreement one-shot"],
            "source_psnr_drop_db": mean["source PSNR initial"] - mean["source PSNR TIRE staged"]}


def run_config(cfg: Config, seeds: tuple[int, ...] = SEEDS, progress=None) -> Result:
    """Every group of subjects on every seed (the seed draws the generator's geometry error); the checks read
    the held-out test group only, as mean - sd (or + sd) over seeds."""
    jobs = [(group, name, seed) for seed in seeds for group, names in cfg.groups.items() for name in names]
    loop = jobs if progress is None else progress(jobs, desc="subjects", total=len(jobs))
    rows = [{"group": group, "seed": seed, **run_subject(name, cfg, seed=seed)} for group, name, seed in loop]
    figures: dict[str, float] = {"seeds": float(len(seeds))}
    per_seed: dict[str, list[dict]] = {}
    for group in cfg.groups:
        per_seed[group] = [group_figures([r for r in rows if r["group"] == group and r["seed"] == s]) for s in seeds]
        for key in per_seed[group][0]:
            vals = np.asarray([f[key] for f in per_seed[group]])
            figures[f"{group}_{key}"] = float(vals.mean())
            figures[f"{group}_{key}_sd"] = float(vals.std(ddof=1)) if len(vals) > 1 else 0.0
    t = {k[len("test_"):]: v for k, v in figures.items() if k.startswith("test_")}
    checks = {"novel-view PSNR gain >= 3 dB over the initial asset (test subjects, mean - sd over seeds)":
                  t["gain_db"] - t["gain_db_sd"] >= 3.0,
              "staged inpainting beats one-shot (test: mean novel PSNR beyond the seed spread, and on at least "
              "half the subjects on every seed)":
                  t["staged_minus_oneshot_db"] - t["staged_minus_oneshot_db_sd"] > 0
                  and all(f["staged_win_share"] >= 0.5 for f in per_seed["test"]),
              "source view kept (test: PSNR within 0.5 dB of the initial asset or better, mean + sd)":
                  t["source_psnr_drop_db"] + t["source_psnr_drop_db_sd"] <= 0.5}
    notes = [f"seeds {list(seeds)} draw the generator's geometry error; groups: "
             + "; ".join(f"{g}: {', '.join(n)}" for g, n in cfg.groups.items()),
             "val: every subject a setting was chosen or a variant compared on; test: held-out photographs, the "
             "checks read these; test_flat: held-out photographs with almost no colour variation (texture sd < "
             "0.05, set aside before any run), reported, not checked",
             "view agreement = PSNR of the re-splatted asset against the completed views it was fitted to: high when "
             "the completed views agree with each other; inpainted px = pixels inpainted, staged / one-shot",
             f"photo columns front to back {cfg.columns}; inpainter top-{cfg.top}; stages {list(cfg.stages)}; "
             f"novel views {list(cfg.novel)}; {cfg.gaussians} Gaussians, {cfg.size}x{cfg.size} px orthographic renders"
             + ("; the Gaussians the source shows keep their colours in the re-splat (attempt 3)" if cfg.freeze_seen else "")]
    return Result(rows, figures, checks, notes, seeds=len(seeds))


def run(seed: int = 0, progress=None) -> Result:
    """Seeds 0, 1, 2 (fixed; the runner's `seed` is not used)."""
    torch.set_num_threads(1)
    return run_config(Config(), SEEDS, progress)


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
