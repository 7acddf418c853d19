"""Real images seen by two cameras, and the frozen network trained on the first.

The images are scikit-learn's bundled handwritten digits (1,797 real scans, 8 x 8), drawn twice as large on
a 24 x 24 canvas. The reference camera shows them upright and grey. The shifted camera is one fixed
mounting and sensor: turned 20 degrees, zoomed 1.25x, off-centre by two pixels, with a colour cast
(channel gains 0.25 / 1.0 / 1.6, small offsets) and sensor noise. A small CNN trained on the reference
camera is the frozen encoder; the prompts must make the shifted camera's frames look like its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

SIDE = 24
DIGIT_SIDE = 16
MEAN, STD = 0.25, 0.35  # input normalisation of the frozen network (grey digits on black)


@dataclass(frozen=True)
class Camera:
    """One fixed camera: rotation (degrees), zoom, shift (pixels), per-channel gain and offset, noise."""

    angle: float = 20.0
    zoom: float = 1.25
    shift: tuple[float, float] = (2.0, -1.0)
    gain: tuple[float, float, float] = (0.25, 1.0, 1.6)
    offset: tuple[float, float, float] = (0.1, 0.0, 0.05)
    noise: float = 0.03


def reference_frames() -> tuple[torch.Tensor, torch.Tensor]:
    """All digits as [N, 3, 24, 24] grey frames in [0, 1] from the reference camera, and their labels."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = torch.tensor(digits.images, dtype=torch.float32)[:, None] / 16.0
    x = F.interpolate(x, size=(DIGIT_SIDE, DIGIT_SIDE), mode="bilinear", align_corners=False)
    pad = (SIDE - DIGIT_SIDE) // 2
    x = F.pad(x, (pad, pad, pad, pad)).clamp(0, 1)
    return x.expand(-1, 3, -1, -1).contiguous(), torch.tensor(digits.target, dtype=torch.long)


def through_camera(x: torch.Tensor, camera: Camera, seed: int) -> torch.Tensor:
    """What `camera` records of reference frames `x`: the fixed warp, colour cast and fresh sensor noise."""
    a = math.radians(camera.angle)
    lin = torch.tensor([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]]) * camera.zoom
    shift = torch.tensor(camera.shift) * 2.0 / SIDE
    inv = torch.linalg.inv(lin)
    theta = torch.cat([inv, -(inv @ shift[:, None])], dim=1)
    grid = F.affine_grid(theta[None].expand(len(x), 2, 3), list(x.shape), align_corners=False)
    y = F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
    y = y * torch.tensor(camera.gain)[None, :, None, None] + torch.tensor(camera.offset)[None, :, None, None]
    g = torch.Generator().manual_seed(seed)
    return (y + camera.noise * torch.randn(y.shape, generator=g)).clamp(0, 1)


def normalise(x: torch.Tensor) -> torch.Tensor:
    return (x - MEAN) / STD


class SmallCNN(nn.Module):
    """The frozen encoder: two conv blocks and a two-layer classifier over ten digits."""

    def __init__(self, classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten())
        self.head = nn.Sequential(nn.Linear(32 * (SIDE // 4) ** 2, 64), nn.ReLU(), nn.Linear(64, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


def _jitter(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Shift each image by up to one pixel: the reference camera's own small framing noise."""
    dx, dy = (int(v) for v in torch.randint(-1, 2, (2,), generator=gen))
    return torch.roll(x, shifts=(dy, dx), dims=(2, 3))


def train_frozen(x: torch.Tensor, y: torch.Tensor, seed: int, epochs: int = 15, progress=None) -> SmallCNN:
    """Train the encoder on reference frames, then freeze it (eval mode, no gradients)."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = SmallCNN()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    loop = range(epochs) if progress is None else progress(range(epochs), desc="frozen encoder", total=epochs)
    for _ in loop:
        order = torch.randperm(len(x), generator=gen)
        for i in range(0, len(x), 64):
            idx = order[i:i + 64]
            loss = F.cross_entropy(model(normalise(_jitter(x[idx], gen))), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model
