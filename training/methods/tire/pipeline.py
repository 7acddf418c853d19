"""Track, Inpaint, REsplat: the progressive edit, its one-shot ablation, and re-splatting.

Progressive (TIRE): views are completed in stages ordered by their angle from the source (the paper's
+-20 deg "sweet spot", then +-90, then 180). Each view of a stage takes the colours its pixels carry along
valid backward tracks into the anchors (the source and every view completed in earlier stages); the
foreground pixels without a track are inpainted by the source-only inpainter, and the completed view
becomes an anchor for the next stages. One-shot (the ablation): every view is tracked to the source alone
and inpainted at once. Either way the asset is then re-splatted once to all the completed views, with the
source view weighted heavily (TIRE freezes the source view's latents) so the seen side does not drift.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.optimize import Bounds, minimize

from training.methods.tire.inpaint import ExemplarInpainter
from training.methods.tire.splats import Camera, Splats, SplatView, splat
from training.methods.tire.track import carry_along_tracks

# Pixels whose opacity is above this show the surface colour; the rim between blends it with the background.
INTERIOR = 0.9
# A Gaussian the source view shows by at least this much (its compositing weights summed over the source's
# pixels: one pixel's worth) keeps the colours the generator fitted to the photo (TIRE freezes the source latents).
SEEN = 1.0


def trusted_pixels(view: SplatView) -> torch.Tensor:
    """(P,) bool: the pixels that are surface or background, not the half-transparent rim between them."""
    return (view.alpha > INTERIOR) | (view.alpha < 1 - INTERIOR)


def source_seen(view: SplatView) -> torch.Tensor:
    """The Gaussians (N,) the source view shows by at least one pixel's worth of compositing weight."""
    return view.weights.detach().sum(0) >= SEEN


@dataclass
class Anchor:
    """A view the asset must reproduce: its image (P, 3), a view weight, and per-pixel weights (P,)."""

    view: SplatView
    image: torch.Tensor
    weight: float
    pixels: torch.Tensor


def resplat(scene: Splats, anchors: list[Anchor], ridge: float = 1e-3,
            frozen: torch.Tensor | None = None) -> Splats:
    """Re-fit the Gaussians' colours to the anchor images; the `frozen` ones (a bool mask) keep theirs.

    With the geometry fixed the renderer is linear in the colours (image = W c + T bg), so the weighted
    least-squares fit sum_a w_a |W_a c + T_a bg - target_a|^2 is a quadratic in c; it is minimised with the
    colours kept in [0, 1] (L-BFGS-B on the normal equations). Solving it unconstrained and clipping after
    breaks on an uneven surface, where Gaussians nearly hidden behind others take colours far outside [0, 1]
    that cancel each other. `ridge` keeps Gaussians that no anchor sees at their current colours."""
    n = scene.colours.shape[0]
    lhs, rhs = ridge * torch.eye(n, dtype=torch.float64), ridge * scene.colours.double()
    for a in anchors:
        w = (a.view.weights.detach() * a.pixels.unsqueeze(-1)).double()
        residual = ((a.image - a.view.transmittance.detach().unsqueeze(-1) * a.view.background)
                    * a.pixels.unsqueeze(-1)).double()
        lhs = lhs + a.weight * (w.T @ w)
        rhs = rhs + a.weight * (w.T @ residual)

    def objective(flat: np.ndarray) -> tuple[float, np.ndarray]:
        c = torch.from_numpy(flat).view(n, 3)
        qc = lhs @ c  # torch, so the product runs on the experiment's thread budget
        return float((c * (0.5 * qc - rhs)).sum()), (qc - rhs).reshape(-1).numpy()

    start = scene.colours.double().clamp(0, 1).numpy().reshape(-1)
    low, high = np.zeros_like(start), np.ones_like(start)
    if frozen is not None:  # a variable with equal bounds stays where it starts
        keep = frozen.numpy().repeat(3)
        low[keep], high[keep] = start[keep], start[keep]
    fit = minimize(objective, start, jac=True, method="L-BFGS-B", bounds=Bounds(low, high),
                   options={"maxiter": 2000})
    colours = torch.tensor(fit.x.reshape(n, 3), dtype=torch.float32)
    return Splats(scene.means, scene.scales, scene.opacities, colours)


@dataclass
class EditLog:
    """Per inpainted view: its azimuth and how many pixels were masked; `anchors` are the completed views
    the asset was re-splatted to (the source first)."""

    azimuths: list[float]
    masked: list[int]
    anchors: list[Anchor]


def tire_edit(initial: Splats, source: Camera, source_image: torch.Tensor, stages: list[list[float]],
              progressive: bool = True, source_weight: float = 100.0, top: int = 5,
              freeze_seen: bool = False, progress=None) -> tuple[Splats, EditLog]:
    """Run the edit; `source_image` (P, 3) is the subject photo as the source camera sees it. With
    `freeze_seen` the Gaussians the source shows keep the generator's photo-fitted colours in the re-splat."""
    src_view = splat(initial, source)
    interior = src_view.alpha > INTERIOR
    inpainter = ExemplarInpainter(src_view.grid(source_image), src_view.grid(interior), top=top)
    anchors = [Anchor(src_view, source_image, source_weight, torch.ones_like(interior, dtype=torch.float32))]
    log = EditLog([], [], [])
    plan = stages if progressive else [[az for stage in stages for az in stage]]
    loop = plan if progress is None else progress(plan, desc="stages", total=len(plan))
    for stage in loop:
        reference = list(anchors) if progressive else anchors[:1]
        new = []
        for az in stage:
            view = splat(initial, Camera(az, source.elevation, source.size, source.extent))
            carried, tracked = carry_along_tracks(view, [a.view for a in reference], [a.image for a in reference])
            mask = (view.alpha > 0.5) & ~tracked
            start = torch.where(tracked.unsqueeze(-1), carried, view.image(initial.colours))
            filled = inpainter.inpaint(view.grid(start), view.grid(mask)).reshape(-1, 3)
            new.append(Anchor(view, filled, 1.0, trusted_pixels(view).float()))
            log.azimuths.append(az)
            log.masked.append(int(mask.sum()))
        anchors += new
    log.anchors = anchors
    return resplat(initial, anchors, frozen=source_seen(src_view) if freeze_seen else None), log


def psnr(pred: torch.Tensor, truth: torch.Tensor, where: torch.Tensor) -> float:
    """PSNR (dB, peak 1) over the pixels `where`."""
    mse = float(((pred - truth)[where] ** 2).mean())
    return 10 * torch.log10(torch.tensor(1.0 / max(mse, 1e-10))).item()


def agreement_psnr(scene: Splats, anchors: list[Anchor]) -> float:
    """PSNR of the re-splatted asset against the completed views it was fitted to (the source left out),
    over their trusted foreground: one asset can only match them all where they agree with each other."""
    errs = []
    for a in anchors[1:]:
        where = (a.pixels > 0) & (a.view.alpha > 0.5)
        errs.append(((a.view.image(scene.colours) - a.image)[where] ** 2).mean())
    return 10 * torch.log10(1.0 / torch.stack(errs).mean().clamp_min(1e-10)).item()


def view_psnr(scene: Splats, truth: Splats, camera: Camera) -> float:
    """PSNR of the scene's render against the ground truth's, over the subject's silhouette."""
    view = splat(truth, camera)
    return psnr(view.image(scene.colours), view.image(truth.colours), view.alpha > 0.5)
