"""Backward tracking: which pixels of a target view correspond to nothing already seen in an anchor view.

TIRE runs CoTracker backwards, from each target view to the source (or to already-inpainted anchors), and
inpaints the target pixels without a valid track: backward tracks give one contiguous region to fill, where
forward tracks leave holes. In miniature the scene geometry stands in for the point tracker: a target pixel's
surface point (its expected depth, unprojected) is tracked into an anchor view, and the track is valid when
that point lands on the anchor's silhouette at the depth the anchor sees there (it is not occluded).
Colours are carried along valid tracks; the foreground pixels left without one form the inpainting mask.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

from training.methods.tire.splats import SplatView


def surface_points(view: SplatView) -> torch.Tensor:
    """(P, 3) world point under each pixel (camera x, y and the rendered expected depth)."""
    cam = torch.cat([view.camera.pixels(), view.depth.unsqueeze(-1)], dim=-1)
    return view.camera.unproject(cam)


def tracked_into(points: torch.Tensor, anchor: SplatView, depth_tol: float = 0.12,
                 min_alpha: float = 0.5) -> torch.Tensor:
    """(P,) bool: the points are visible (in frame, on the silhouette, not occluded) in the anchor view."""
    cam = anchor.camera.project(points)
    rc = anchor.camera.pixel_of(cam[:, :2])
    size = anchor.camera.size
    inside = (rc >= 0).all(-1) & (rc < size).all(-1)
    flat = (rc[:, 0].clamp(0, size - 1) * size + rc[:, 1].clamp(0, size - 1))
    visible = (anchor.alpha[flat] > min_alpha) & ((anchor.depth[flat] - cam[:, 2]).abs() < depth_tol)
    return inside & visible


def sample_at(anchor: SplatView, image: torch.Tensor, points: torch.Tensor, where: torch.Tensor) -> torch.Tensor:
    """(n, 3) colours of `image` (P, 3) at the points' sub-pixel positions in the anchor view.

    A point tracker returns sub-pixel positions; the colour there is interpolated bilinearly from the anchor's
    pixels in `where` (P,) bool, so the rim and the background do not bleed in. Taking the nearest pixel
    instead costs 2-4 dB per hop, a resampling error a chain of anchors would compound."""
    cam = anchor.camera.project(points)
    grid = torch.stack([cam[:, 0], -cam[:, 1]], -1) / anchor.camera.extent  # pixel centres, align_corners=False
    m = anchor.grid(where.float()).unsqueeze(-1)
    stack = torch.cat([anchor.grid(image) * m, m], -1).permute(2, 0, 1).unsqueeze(0)
    out = F.grid_sample(stack, grid.view(1, 1, -1, 2), mode="bilinear", align_corners=False)[0, :, 0].T
    return out[:, :3] / out[:, 3:].clamp_min(1e-6)


def carry_along_tracks(target: SplatView, anchors: list[SplatView], images: list[torch.Tensor],
                       anchor_alpha: float = 0.9) -> tuple[torch.Tensor, torch.Tensor]:
    """Colours carried from the anchors to the target along valid backward tracks, and which pixels got one.

    Each pixel takes the colour where its track lands in the first anchor (in the given order: the source,
    then the views completed earliest) that sees it; returns (P, 3) colours and a (P,) bool mask. A track
    only counts where it lands on an anchor pixel of opacity above `anchor_alpha`: the anchor's
    half-transparent rim sees the surface at a grazing angle and does not pin its colour down."""
    points = surface_points(target)
    colours = torch.zeros(points.shape[0], 3)
    done = torch.zeros(points.shape[0], dtype=torch.bool)
    for anchor, image in zip(anchors, images, strict=True):
        ok = tracked_into(points, anchor, min_alpha=anchor_alpha) & ~done
        colours[ok] = sample_at(anchor, image, points[ok], anchor.alpha > anchor_alpha)
        done |= ok
    return colours, done & (target.alpha > 0.5)
