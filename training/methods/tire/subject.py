"""The subject: a sphere wearing a real photograph's colours, and the generator's initial guess of it.

The ground-truth texture is a crop of a scikit-image photograph resized to `shape` (rows = latitude,
columns = longitude), tiled around the sphere `repeats` times or wrapped once and mirrored (`mirror`). One
column gives bands, the same from every azimuth. The experiment wraps two columns mirrored: the back has
its own colours but continues the sides, as a real object's unseen side differs from its seen side yet
resembles it, so the source view still holds evidence for it.
The initial asset stands in for a feed-forward image-to-3D generator (LGM in the paper). It sees only the
source photo: its geometry is an estimate of the subject's (`estimated_geometry`: the depth along the source
camera's axis stretched or squashed and every Gaussian moved off the surface, by a seeded draw, as one view
leaves depth ambiguous), the source-visible colours are reconstructed and the unseen side is a blurry,
identity-less guess (the colours fitted to the photo, pulled towards its mean colour, then low-pass filtered
over the sphere). Nothing downstream of the generator reads the true asset; only the scorer does.
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
    img = getattr(skdata, name)()
    img = np.asarray(img[0] if isinstance(img, tuple) else img, dtype=np.float64)  # stereo pairs: the left view
    img = (np.repeat(img[..., None], 3, -1) if img.ndim == 2 else img[..., :3]) / 255.0  # grey photos as RGB
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


def estimated_geometry(truth: Splats, seed: int, depth: float = 0.1, jitter: float = 0.02) -> Splats:
    """The generator's geometry: the truth's Gaussians with their depth along the source axis (world z) scaled
    by a factor drawn from U(1 - depth, 1 + depth) and each moved along its normal by N(0, jitter). The numbers
    were set before any run, as a plausible single-view error; nothing was tuned on them."""
    g = torch.Generator().manual_seed(seed)
    stretch = 1 + depth * (2 * torch.rand(1, generator=g).item() - 1)
    means = truth.means * (1 + jitter * torch.randn(truth.means.shape[0], 1, generator=g))
    means = means * torch.tensor([1.0, 1.0, stretch])
    return Splats(means, truth.scales.clone(), truth.opacities.clone(), torch.full_like(truth.colours, 0.5))


def generator_guess(geometry: Splats, source: Camera, photo: torch.Tensor, steps: int = 200, prior: float = 0.02,
                    smooth: float = 0.5) -> Splats:
    """Colours of `geometry` fitted to the source `photo` (P, 3) only, with a ridge towards the photo's mean
    colour, then blurred over the surface (kernel width `smooth` radians): sharp where seen, blurry and
    generic where not."""
    view = splat(geometry, source)
    target = photo
    fg = view.alpha > 0.5
    mean = target[fg].mean(0)
    colours = mean.expand_as(geometry.colours).clone().requires_grad_(True)
    opt = torch.optim.Adam([colours], lr=0.05)
    for _ in range(steps):
        loss = ((view.image(colours) - target)[fg] ** 2).sum() + prior * ((colours - mean) ** 2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    seen = view.weights.sum(0).detach() > 0.3
    unit = geometry.means / geometry.means.norm(dim=-1, keepdim=True)
    kernel = torch.exp((unit @ unit.T - 1) / smooth ** 2)
    blurred = (kernel @ colours.detach()) / kernel.sum(-1, keepdim=True)
    fitted = torch.where(seen.unsqueeze(-1), colours.detach(), blurred).clamp(0, 1)
    return Splats(geometry.means, geometry.scales, geometry.opacities, fitted)
