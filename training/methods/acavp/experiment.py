"""ACAVP in miniature: adapt a frozen digit classifier to a tilted, zoomed, colour-cast camera with prompts.

A small CNN is trained on 900 digits from the reference camera and frozen. The shifted camera records the other
digits; 400 of them (labelled) fit each prompt, the remaining 497 are the test. Additive-only prompting (a
learnable 3-pixel border) is compared with ACAVP (affine + colour + additive). TrivialAugment is then compared
in the low-data regime where prompts over-fit (100 labelled frames, longer training), as the paper motivates
it. Accuracy is reported as the paper does (prompted images unclipped) and clipped to [0, 1] as a deployed
prompt writes 8-bit frames; the fitted ACAVP prompt is also exported and run through Foresight's
`FramePrompt` on uint8 frames.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import torch

from models.encoders.frame_prompt import FramePrompt
from training.methods.acavp.camera import export_prompt
from training.methods.acavp.digits import (
    SIDE,
    Camera,
    normalise,
    reference_frames,
    through_camera,
    train_frozen,
)
from training.methods.acavp.fit import FitConfig, accuracy, fit_prompt
from training.methods.acavp.prompter import ACAVPrompt, PadPrompt
from training.methods.runner import Experiment, Result

FROZEN_TRAIN, PROMPT_TRAIN, FEW = 900, 400, 100
PAD = 3
MAIN = FitConfig(epochs=30)
FEW_SHOT = FitConfig(epochs=60)


def _deployed_accuracy(frozen, prompt: ACAVPrompt, x: torch.Tensor, y: torch.Tensor) -> float:
    """Accuracy when the exported prompt runs through `FramePrompt` on 8-bit frames, as Foresight runs it."""
    with tempfile.TemporaryDirectory() as tmp:
        applier = FramePrompt.load(export_prompt(prompt, Path(tmp) / "camera.npz"))
    frames = (x.clamp(0, 1) * 255).round().to(torch.uint8).permute(0, 2, 3, 1).numpy()
    out = torch.stack([torch.from_numpy(applier(f)) for f in frames]).permute(0, 3, 1, 2).float() / 255.0
    return accuracy(frozen, normalise, out, y)


def run(seed: int = 0, progress=None) -> Result:
    torch.set_num_threads(1)
    x, y = reference_frames()
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))
    ref_idx, fit_idx, test_idx = perm[:FROZEN_TRAIN], perm[FROZEN_TRAIN:FROZEN_TRAIN + PROMPT_TRAIN], \
        perm[FROZEN_TRAIN + PROMPT_TRAIN:]
    frozen = train_frozen(x[ref_idx], y[ref_idx], seed, progress=progress)
    shifted = through_camera(x, Camera(), seed + 1)
    xt, yt = shifted[test_idx], y[test_idx]

    rows = [{"camera": "reference", "prompt": "none", "frames": 0, "trivial_augment": False, "params": 0,
             "accuracy": accuracy(frozen, normalise, x[test_idx], yt), "accuracy_clipped": float("nan")},
            {"camera": "shifted", "prompt": "none", "frames": 0, "trivial_augment": False, "params": 0,
             "accuracy": accuracy(frozen, normalise, xt, yt), "accuracy_clipped": float("nan")}]
    fitted = {}
    plan = [("additive", PROMPT_TRAIN, False, MAIN), ("acavp", PROMPT_TRAIN, False, MAIN),
            ("additive", FEW, False, FEW_SHOT), ("additive", FEW, True, FEW_SHOT),
            ("acavp", FEW, False, FEW_SHOT), ("acavp", FEW, True, FEW_SHOT)]
    for kind, n, ta, cfg in plan:
        prompt = PadPrompt((SIDE, SIDE), PAD) if kind == "additive" else ACAVPrompt((SIDE, SIDE))
        cfg = FitConfig(cfg.epochs, cfg.lr, cfg.batch, ta)
        idx = fit_idx[:n]
        fit_prompt(prompt, frozen, normalise, shifted[idx], y[idx], cfg, seed, progress,
                   desc=f"{kind} n={n}{' +TA' if ta else ''}")
        fitted[(kind, n, ta)] = prompt
        rows.append({"camera": "shifted", "prompt": kind, "frames": n, "trivial_augment": ta,
                     "params": sum(p.numel() for p in prompt.parameters()),
                     "accuracy": accuracy(frozen, normalise, xt, yt, prompt, clamp=False),
                     "accuracy_clipped": accuracy(frozen, normalise, xt, yt, prompt, clamp=True)})

    acc = {(r["prompt"], r["frames"], r["trivial_augment"]): r["accuracy"] for r in rows if r["prompt"] != "none"}
    clipped = next(r["accuracy_clipped"] for r in rows if (r["prompt"], r["frames"]) == ("acavp", PROMPT_TRAIN))
    deployed = _deployed_accuracy(frozen, fitted[("acavp", PROMPT_TRAIN, False)], xt, yt)
    zero_shot = rows[1]["accuracy"]
    main_gap = acc[("acavp", PROMPT_TRAIN, False)] - acc[("additive", PROMPT_TRAIN, False)]
    few_gap = acc[("acavp", FEW, False)] - acc[("additive", FEW, False)]
    ta_acavp = acc[("acavp", FEW, True)] - acc[("acavp", FEW, False)]
    ta_additive = acc[("additive", FEW, True)] - acc[("additive", FEW, False)]
    figures = {"reference_accuracy": rows[0]["accuracy"], "shifted_zero_shot": zero_shot,
               "additive_accuracy": acc[("additive", PROMPT_TRAIN, False)],
               "acavp_accuracy": acc[("acavp", PROMPT_TRAIN, False)], "acavp_minus_additive_pp": 100 * main_gap,
               "acavp_minus_additive_100_frames_pp": 100 * few_gap, "acavp_deployed_uint8": deployed,
               "trivial_augment_gain_acavp_pp": 100 * ta_acavp,
               "trivial_augment_gain_additive_pp": 100 * ta_additive}
    checks = {"acavp_beats_additive_by_10pp": main_gap >= 0.10,
              "acavp_beats_additive_with_100_frames": few_gap >= 0.10,
              "acavp_recovers_20pp_over_no_prompt": acc[("acavp", PROMPT_TRAIN, False)] >= zero_shot + 0.20,
              "deployed_prompt_within_2pp_of_clipped": abs(deployed - clipped) <= 0.02}
    notes = [f"TrivialAugment (100 frames, 60 epochs): {100 * ta_acavp:+.1f} pp for ACAVP, "
             f"{100 * ta_additive:+.1f} pp for additive prompting; not a check: reported whichever way it goes.",
             "accuracy = prompted images unclipped (as in the paper); accuracy_clipped = clipped to [0, 1], as a "
             "deployed prompt writes 8-bit frames; the additive border prompt leans on values outside [0, 1].",
             "acavp_deployed_uint8: the 400-frame ACAVP prompt exported and applied by "
             "models.encoders.frame_prompt.FramePrompt (OpenCV) on uint8 frames."]
    return Result(rows, figures, checks, notes)


EXPERIMENT = Experiment(
    name="acavp",
    title="ACAVP: affine, colour and additive visual prompting",
    paper="Enomoto, Enhancing Visual Prompting through Expanded Transformation Space and Overfitting "
          "Mitigation, NeurIPS 2025 (arXiv 2510.07823)",
    claim="On a shifted camera (rotated, zoomed, colour-cast frames) in front of a frozen encoder, affine + "
          "colour + additive prompts beat additive-only prompting clearly; TrivialAugment is reported as measured",
    run=run,
)
