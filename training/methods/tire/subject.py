"""The subject: a sphere wearing a real photograph's colours, and the generator's initial guess of it.

The ground-truth texture is a crop of a scikit-image photograph resized to `shape` (rows = latitude,
columns = longitude), tiled around the sphere `repeats` times or wrapped once and mirrored (`mirror`). One
column gives bands, the same from every azimuth. The experiment wraps two columns mirrored: the back has
its own colours but continues the sides, as a real object's unseen side differs from its seen side yet
resembles it, so the source view still holds evidence for it.
The initial asset stands in for a feed-forward image-to-3D generator (LGM in the paper): geometry right,
the source-visible colours reconstructed, the unseen side a blurry, identity-less guess (the colours fitted
to the source view, pulled towards the source's mean colour, then low-pass filtered over the sphere).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from skimage import data as skdata
from skimage.transform import resize

from training.methods.tire.splats import Camera, Splats, splat


def photo_texture(name: str = "coffee", box: tuple[float, float, float, float] = (0.05, 0.75, 0.1, 0.7),
                  shape: tuple[int, int] = (48, 1)) -> np.ndarray:
    """(rows, cols, 3) RGB in [0, 1]: the crop `box` = (top, bottom, left, right) fractions of a photo."""
    img = np.asarray(getattr(skdata, name)(), dtype=np.float64)[..., :3] / 255.0
    h, w = img.shape[:2]
    crop = img[int(box[0] * h):int(box[1] * h), int(box[2] * w):int(box[3] * w)]
    return resize(crop, shape, anti_aliasing=True).astype(np.float32)


def lon_lat(means: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Longitude (0 faces the source camera at azimuth 0) and latitude of points on the unit sphere."""
    x, y, z = means.unbind(-1)
    return torch.atan2(x, -z), torch.asin(y.clamp(-1, 1))


def texture_colours(means: torch.Tensor, texture: np.ndarray, repeats: int = 1, mirror: bool = False) -> torch.Tensor:
    """(N, 3) colours: the texture sampled (bilinear) at each Gaussian's longitude/latitude.

    `mirror` wraps the texture once, left-right symmetric: column 0 faces the source camera and the last
    column the back, so the unseen side differs from the seen one but joins it without a seam. Otherwise
    the texture is tiled `repeats` times around the sphere."""
    lon, lat = lon_lat(means)
    rows, cols = texture.shape[:2]
    if mirror:
        u, tex = (lon.abs() / math.pi).numpy() * (cols - 1), texture
    else:
        u = ((lon / (2 * math.pi / repeats)) % 1.0).numpy() * cols
        tex = np.concatenate([texture, texture[:, :1]], axis=1)  # wrap the last column
    v = ((0.5 - lat / math.pi).numpy() * (rows - 1)).clip(0, rows - 1)
    r0, c0 = np.floor(v).astype(int), np.floor(u).astype(int)
    r1, c1 = np.minimum(r0 + 1, rows - 1), np.minimum(c0 + 1, tex.shape[1] - 1)
    fr, fc = (v - r0)[:, None], (u - c0)[:, None]
    out = ((1 - fr) * (1 - fc) * tex[r0, c0] + (1 - fr) * fc * tex[r0, c1] + fr * (1 - fc) * tex[r1, c0]
           + fr * fc * tex[r1, c1])
    return torch.tensor(out, dtype=torch.float32)


def subject_scene(n: int = 1000, texture: np.ndarray | None = None, repeats: int = 1, mirror: bool = False) -> Splats:
    """The ground-truth asset."""
    scene = Splats.sphere(n)
    scene.colours = texture_colours(scene.means, photo_texture() if texture is None else texture, repeats, mirror)
    return scene


def generator_guess(truth: Splats, source: Camera, steps: int = 200, prior: float = 0.02,
                    smooth: float = 0.5) -> Splats:
    """Colours fitted to the source view only, with a ridge towards the source's mean colour, then blurred
    over the sphere (kernel width `smooth` radians): sharp where seen, blurry and generic where not."""
    view = splat(truth, source)
    target = view.image(truth.colours)
    fg = view.alpha > 0.5
    mean = target[fg].mean(0)
    colours = mean.expand_as(truth.colours).clone().requires_grad_(True)
    opt = torch.optim.Adam([colours], lr=0.05)
    for _ in range(steps):
        loss = ((view.image(colours) - target)[fg] ** 2).sum() + prior * ((colours - mean) ** 2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    seen = view.weights.sum(0).detach() > 0.3
    cosine = truth.means @ truth.means.T
    kernel = torch.exp((cosine - 1) / smooth ** 2)
    blurred = (kernel @ colours.detach()) / kernel.sum(-1, keepdim=True)
    fitted = torch.where(seen.unsqueeze(-1), colours.detach(), blurred).clamp(0, 1)
    return Splats(truth.means, truth.scales, truth.opacities, fitted)
