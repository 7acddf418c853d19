"""A differentiable 3D Gaussian-splat scene and renderer in torch (orthographic cameras on an orbit).

Each Gaussian i has a centre mu_i, an isotropic scale s_i, an opacity o_i and an RGB colour c_i. Seen by an
orthographic camera, its footprint at pixel p is alpha_i(p) = o_i exp(-|p - P mu_i|^2 / (2 s_i^2)); the
Gaussians are sorted front to back and alpha-composited: C(p) = sum_i T_i(p) alpha_i(p) c_i + T(p) bg with
T_i = prod_{j<i} (1 - alpha_j). Everything is differentiable. The compositing weights w_i(p) = T_i alpha_i
do not depend on the colours, so a fixed-geometry scene can cache them per view (`SplatView`) and render
any colours as one matrix product, which is how re-splatting fits colours cheaply.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Camera:
    """An orthographic view from azimuth `azimuth` (degrees, 0 = the subject's front) and `elevation`."""

    azimuth: float
    elevation: float = 10.0
    size: int = 40
    extent: float = 1.25  # half-width of the view in world units

    def rotation(self) -> torch.Tensor:
        """World -> camera rotation: camera x right, y up, z pointing away from the viewer (depth)."""
        a, e = math.radians(self.azimuth), math.radians(self.elevation)
        yaw = torch.tensor([[math.cos(a), 0.0, -math.sin(a)], [0.0, 1.0, 0.0], [math.sin(a), 0.0, math.cos(a)]])
        pitch = torch.tensor([[1.0, 0.0, 0.0], [0.0, math.cos(e), -math.sin(e)], [0.0, math.sin(e), math.cos(e)]])
        return pitch @ yaw

    def pixels(self) -> torch.Tensor:
        """(size*size, 2) pixel centres in camera x, y (row 0 at the top)."""
        lin = (torch.arange(self.size) + 0.5) / self.size * 2 * self.extent - self.extent
        y, x = torch.meshgrid(-lin, lin, indexing="ij")
        return torch.stack([x.reshape(-1), y.reshape(-1)], dim=-1)

    def project(self, points: torch.Tensor) -> torch.Tensor:
        """(n, 3) world points -> (n, 3) camera coordinates (x, y, depth); the viewer is at depth -inf."""
        return points @ self.rotation().T

    def unproject(self, cam_points: torch.Tensor) -> torch.Tensor:
        return cam_points @ self.rotation()

    def pixel_of(self, xy: torch.Tensor) -> torch.Tensor:
        """(n, 2) camera x, y -> (n, 2) integer (row, col), possibly outside the image."""
        col = torch.floor((xy[:, 0] + self.extent) / (2 * self.extent) * self.size)
        row = torch.floor((self.extent - xy[:, 1]) / (2 * self.extent) * self.size)
        return torch.stack([row, col], dim=-1).long()


def fibonacci_sphere(n: int, radius: float = 1.0) -> torch.Tensor:
    """n nearly uniform points on a sphere (golden-angle spiral)."""
    i = torch.arange(n, dtype=torch.float32) + 0.5
    y = 1 - 2 * i / n
    r = torch.sqrt(1 - y ** 2)
    phi = math.pi * (3 - math.sqrt(5)) * i
    return radius * torch.stack([r * torch.sin(phi), y, r * torch.cos(phi)], dim=-1)


@dataclass
class Splats:
    """means (N, 3), scales (N,), opacities (N,), colours (N, 3) in [0, 1]; any may require grad."""

    means: torch.Tensor
    scales: torch.Tensor
    opacities: torch.Tensor
    colours: torch.Tensor

    @classmethod
    def sphere(cls, n: int = 1000, scale: float = 0.08, opacity: float = 0.95) -> Splats:
        means = fibonacci_sphere(n)
        return cls(means, torch.full((n,), scale), torch.full((n,), opacity), torch.full((n, 3), 0.5))


@dataclass
class SplatView:
    """What a camera sees of a scene's geometry: compositing weights (P, N), the leftover transmittance (P,)
    and the expected depth (P,); `image(colours)` composites any colours over the background."""

    camera: Camera
    weights: torch.Tensor
    transmittance: torch.Tensor
    depth: torch.Tensor
    background: float = 1.0

    @property
    def alpha(self) -> torch.Tensor:
        return 1 - self.transmittance

    def image(self, colours: torch.Tensor) -> torch.Tensor:
        """(P, 3) rendered colours."""
        return self.weights @ colours + self.transmittance.unsqueeze(-1) * self.background

    def grid(self, flat: torch.Tensor) -> torch.Tensor:
        """(P, ...) -> (size, size, ...)."""
        return flat.reshape(self.camera.size, self.camera.size, *flat.shape[1:])


def splat(scene: Splats, camera: Camera, background: float = 1.0, cutoff: float = 3.5) -> SplatView:
    """Front-to-back alpha compositing of every Gaussian at every pixel (differentiable)."""
    cam = camera.project(scene.means)
    order = torch.argsort(cam[:, 2])
    cam, scales, opac = cam[order], scene.scales[order], scene.opacities[order]
    d2 = ((camera.pixels()[:, None, :] - cam[None, :, :2]) ** 2).sum(-1)  # (P, N)
    alpha = opac * torch.exp(-d2 / (2 * scales ** 2))
    alpha = torch.where(d2 < (cutoff * scales) ** 2, alpha, torch.zeros_like(alpha)).clamp(max=0.99)
    trans = torch.cumprod(torch.cat([torch.ones_like(alpha[:, :1]), 1 - alpha], dim=1), dim=1)
    w_sorted = trans[:, :-1] * alpha
    weights = torch.zeros_like(w_sorted).index_copy(1, order, w_sorted)
    acc = w_sorted.sum(-1)
    depth = (w_sorted * cam[:, 2]).sum(-1) / acc.clamp_min(1e-6)
    return SplatView(camera, weights, trans[:, -1], depth, background)


def render(scene: Splats, camera: Camera, background: float = 1.0) -> torch.Tensor:
    """(size, size, 3) image of the scene."""
    view = splat(scene, camera, background)
    return view.grid(view.image(scene.colours))
