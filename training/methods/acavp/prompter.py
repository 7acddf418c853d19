"""The prompts: learnable image transforms that sit in front of a frozen network and are the only thing trained.

`PadPrompt` is classic additive visual prompting (a learnable pattern added on a fixed border), the baseline
the paper widens. `ACAVPrompt` is the paper's prompter, applied in three steps to an image in [0, 1]:

1. affine: the content is rotated, sheared, scaled and shifted by a bounded, learnable transform
   (rotation = tanh(a) * angle_range, scale = lo + (hi - lo) * sigmoid(s), shear = tanh(h) * shear_range,
   shift = tanh(t) * shift_range of the image side); pixels the warp leaves uncovered become 0;
2. colour: every pixel of every channel is multiplied by a learnable gain sigmoid(m) * gain_range, which
   starts at exactly 1;
3. additive: a learnable pattern is added where the warp left the picture uncovered.

Implemented from the paper's description, not from its (evaluation-licensed) code. Two deliberate differences:
the warp is about the image centre (the reference code turns about the top-left corner), and the additive
mask is the warp's own uncovered area (1 - warped all-ones image) rather than "pixels that are zero in every
image of the batch", so a prompt behaves the same on one frame as on a batch. Coordinates are corrected for
the aspect ratio, so a prompt fitted on small square crops of a camera applies to its full frames.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


@dataclass(frozen=True)
class PromptRanges:
    """Bounds of the learnable transform. The paper's defaults suit natural images that are upright; a
    camera that is tilted or zoomed needs the wider rotation and scale ranges given here."""

    angle: float = math.radians(30)  # radians either way
    scale_lo: float = 0.5
    scale_hi: float = 1.25
    scale_init: float = 0.9
    shear: float = 0.1
    shift: float = 0.1  # fraction of the image side either way
    gain: float = 6.0  # colour gain lies in (0, gain)

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


class PadPrompt(nn.Module):
    """Additive-only prompting: a learnable pattern added on a border `pad` pixels wide."""

    def __init__(self, size: tuple[int, int], pad: int):
        super().__init__()
        h, w = size
        mask = torch.ones(1, h, w)
        mask[:, pad:h - pad, pad:w - pad] = 0.0
        self.register_buffer("mask", mask)
        self.pattern = nn.Parameter(torch.zeros(3, h, w))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.mask * _resize(self.pattern, x.shape[-2:])


def _resize(maps: torch.Tensor, size: torch.Size | tuple[int, int]) -> torch.Tensor:
    """A [C, h, w] prompt map at the frame's size (bilinear), so one prompt serves any resolution."""
    if tuple(maps.shape[-2:]) == tuple(size):
        return maps
    return F.interpolate(maps[None], size=tuple(size), mode="bilinear", align_corners=False)[0]


class ACAVPrompt(nn.Module):
    """Affine, colour and additive prompt; each part can be switched off for ablations."""

    def __init__(self, size: tuple[int, int], ranges: PromptRanges | None = None, affine: bool = True,
                 colour: bool = True, additive: bool = True):
        super().__init__()
        self.size, self.ranges = tuple(size), ranges or PromptRanges()
        self.use_affine, self.use_colour, self.use_additive = affine, colour, additive
        r = self.ranges
        frac = (r.scale_init - r.scale_lo) / (r.scale_hi - r.scale_lo)
        self.angle = nn.Parameter(torch.zeros(1))
        self.scale = nn.Parameter(torch.full((2,), _logit(frac)))
        self.shear = nn.Parameter(torch.zeros(2))
        self.shift = nn.Parameter(torch.zeros(2))
        self.gain = nn.Parameter(torch.full((3, *self.size), _logit(1.0 / r.gain)))
        self.pattern = nn.Parameter(torch.zeros(3, *self.size))

    def linear_and_shift(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The content's map: a 2 x 2 linear part in pixel-isotropic coordinates (rotation, shear, scale)
        and a shift in normalised coordinates ([-1, 1] across each side)."""
        r = self.ranges
        angle = torch.tanh(self.angle[0]) * r.angle
        scale = r.scale_lo + (r.scale_hi - r.scale_lo) * torch.sigmoid(self.scale)
        shear = torch.tanh(self.shear) * r.shear
        cos, sin = torch.cos(angle), torch.sin(angle)
        one = torch.ones(())
        rot = torch.stack([torch.stack([cos, -sin]), torch.stack([sin, cos])])
        shr = torch.stack([torch.stack([one, shear[0]]), torch.stack([shear[1], one])])
        return rot @ shr @ torch.diag(scale), torch.tanh(self.shift) * r.shift * 2.0

    def content_matrix(self, height: int, width: int) -> torch.Tensor:
        """The 2 x 3 map from input to output position in normalised coordinates of an H x W image."""
        lin, shift = self.linear_and_shift()
        aspect = torch.tensor([width / 2.0, height / 2.0])
        lin = lin * aspect[None, :] / aspect[:, None]  # D^-1 @ lin @ D with D = diag(aspect)
        return torch.cat([lin, shift[:, None]], dim=1)

    def _warp(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The warped images and the share of each output pixel that the picture covers."""
        n, _, h, w = x.shape
        forward = self.content_matrix(h, w)
        inv = torch.linalg.inv(forward[:, :2])
        theta = torch.cat([inv, -(inv @ forward[:, 2:])], dim=1)  # output position -> input position
        grid = F.affine_grid(theta[None].expand(n, 2, 3), [n, 1, h, w], align_corners=False)
        ones = torch.ones(n, 1, h, w, dtype=x.dtype)
        both = F.grid_sample(torch.cat([x, ones], 1), grid, mode="bilinear", padding_mode="zeros",
                             align_corners=False)
        return both[:, :-1], both[:, -1:]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cover = torch.ones_like(x[:, :1])
        if self.use_affine:
            x, cover = self._warp(x)
        if self.use_colour:
            x = x * (torch.sigmoid(_resize(self.gain, x.shape[-2:])) * self.ranges.gain)
        if self.use_additive:
            x = x + (1.0 - cover) * _resize(self.pattern, x.shape[-2:])
        return x

    def config(self) -> dict:
        return {"size": list(self.size), "ranges": self.ranges.to_dict(), "affine": self.use_affine,
                "colour": self.use_colour, "additive": self.use_additive}

    @classmethod
    def from_config(cls, config: dict) -> ACAVPrompt:
        return cls(tuple(config["size"]), PromptRanges(**config["ranges"]), config["affine"], config["colour"],
                   config["additive"])
