"""Adapting to one camera: fit an ACAVP prompt on a few labelled frames of that camera, export it for Foresight.

`fit_camera_prompt` takes the camera's RGB frames (uint8, any size), resizes them to the frozen network's
input, and fits the prompt. `export_prompt` writes the prompt resolved (linear map, shift, gain, pattern) as the `.npz`
that `models.encoders.frame_prompt.FramePrompt` reads; `VisualConfig(prompt=path)` then applies it to every
frame in front of the embedded visual encoder (off by default).

The frozen network must be differentiable: the embedded stack itself (OpenCV YOLO, MediaPipe) has no
gradients, so the prompt is fitted through a torch network that was trained on the reference cameras' frames
and then placed in front of the whole visual encoder.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from training.methods.acavp.fit import FitConfig, fit_prompt
from training.methods.acavp.prompter import ACAVPrompt, PromptRanges


def frames_to_batch(frames: list[np.ndarray], size: tuple[int, int]) -> torch.Tensor:
    """uint8 H x W x 3 RGB frames as one [N, 3, h, w] float batch in [0, 1] at the network's input size."""
    out = []
    for f in frames:
        if f.ndim != 3 or f.shape[2] != 3 or f.dtype != np.uint8:
            raise ValueError(f"frames must be H x W x 3 uint8 RGB, got {f.shape} {f.dtype}")
        t = torch.from_numpy(np.ascontiguousarray(f)).permute(2, 0, 1)[None].float() / 255.0
        out.append(F.interpolate(t, size=size, mode="bilinear", align_corners=False, antialias=True)[0])
    return torch.stack(out)


def fit_camera_prompt(frozen: nn.Module, normalise: Callable[[torch.Tensor], torch.Tensor],
                      frames: list[np.ndarray], labels: list[int], size: tuple[int, int],
                      ranges: PromptRanges | None = None, config: FitConfig | None = None, seed: int = 0,
                      progress=None) -> ACAVPrompt:
    """An ACAVP prompt for one camera, fitted so that `frozen` classifies its frames as `labels`."""
    x = frames_to_batch(frames, size)
    y = torch.as_tensor(labels, dtype=torch.long)
    prompt = ACAVPrompt(size, ranges)
    return fit_prompt(prompt, frozen, normalise, x, y, config or FitConfig(), seed, progress, desc="camera prompt")


@torch.no_grad()
def export_prompt(prompt: ACAVPrompt, path: str | Path) -> Path:
    """Write the prompt resolved (linear map, shift, gain, pattern) for `FramePrompt.load`; returns the path."""
    if prompt.use_affine:
        linear, shift = prompt.linear_and_shift()
    else:
        linear, shift = torch.eye(2), torch.zeros(2)
    gain = torch.sigmoid(prompt.gain) * prompt.ranges.gain if prompt.use_colour else torch.ones_like(prompt.gain)
    pattern = prompt.pattern if prompt.use_additive and prompt.use_affine else torch.zeros_like(prompt.pattern)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        np.savez(fh, linear=linear.numpy().astype(np.float64), shift=shift.numpy().astype(np.float64),
                 gain=gain.numpy().astype(np.float32), pattern=pattern.numpy().astype(np.float32))
    return path
