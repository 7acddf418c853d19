"""Subject-driven inpainting learned from the source view only (the role of TIRE's LoRA-tuned SD inpainter).

TIRE personalises an inpainting diffusion model on the single source view ("a photo of sks"), so that
what it paints into masked regions carries the subject's identity. The miniature inpainter is
non-parametric and equally source-only: its "weights" are the source view's 5x5 patches (Efros & Leung
texture synthesis). Masked pixels are filled from the mask's boundary inwards ("onion peel"); each takes the
centre colour of the source patch whose known pixels best match its known neighbourhood (Gaussian-weighted
SSD). Filled pixels become context for the next ring, so the result depends on how much known context the
mask leaves, which is why inpainting a view next to known views works better than one with nothing known.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F


def _windows(image: torch.Tensor, radius: int, fill: float) -> torch.Tensor:
    """(S, S, C) -> (S*S, (2r+1)^2, C): every pixel's neighbourhood, padded with `fill`."""
    s, _, c = image.shape
    k = 2 * radius + 1
    padded = F.pad(image.permute(2, 0, 1), (radius,) * 4, value=fill).unsqueeze(0)
    cols = F.unfold(padded, k)  # (1, C*k*k, S*S)
    return cols.view(c, k * k, s * s).permute(2, 1, 0)


class ExemplarInpainter:
    """Fit on one view (image + foreground mask); `inpaint(image, mask)` fills the masked pixels."""

    def __init__(self, source: torch.Tensor, source_fg: torch.Tensor, radius: int = 2, background: float = 1.0,
                 top: int = 1) -> None:
        self.radius, self.background, self.top = radius, background, top
        patches = _windows(source, radius, background)
        self.patches = patches[source_fg.reshape(-1)]  # (M, k*k, C): patches centred on the subject
        self.patch_sq = (self.patches ** 2).sum(-1)  # (M, k*k)
        k = 2 * radius + 1
        g = torch.exp(-((torch.arange(k) - radius) ** 2).float() / (2 * (k / 6.4) ** 2))
        self.kernel = (g[:, None] * g[None, :]).reshape(-1)
        self.centre = (k * k) // 2

    def inpaint(self, image: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """image (S, S, 3), mask (S, S) bool -> a copy with every masked pixel filled."""
        out, todo = image.clone(), mask.clone()
        neighbours = torch.ones(1, 1, 3, 3)
        while todo.any():
            known = (~todo).float()
            count = F.conv2d(known[None, None], neighbours, padding=1)[0, 0]
            ring = todo & (count > 0)
            if not ring.any():  # nothing known at all: start from the mask's first pixel
                ring = torch.zeros_like(todo)
                ring.view(-1)[torch.nonzero(todo.view(-1))[0]] = True
            idx = torch.nonzero(ring.view(-1)).squeeze(1)
            win = _windows(out, self.radius, self.background)[idx]  # (L, k*k, C)
            ok = _windows(known.unsqueeze(-1), self.radius, 1.0)[idx, :, 0] * self.kernel  # (L, k*k)
            # weighted SSD to every source patch: sum_k ok_k |w_k - p_k|^2, expanded into matrix products
            ssd = ((win ** 2).sum(-1) * ok).sum(-1, keepdim=True) - 2 * torch.einsum(
                "lkc,mkc->lm", win * ok.unsqueeze(-1), self.patches) + ok @ self.patch_sq.T
            best = torch.topk(ssd, min(self.top, ssd.shape[1]), dim=-1, largest=False).indices  # (L, top)
            out.view(-1, out.shape[-1])[idx] = self.patches[best, self.centre].mean(1)
            todo.view(-1)[idx] = False
        return out
