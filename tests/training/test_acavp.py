"""ACAVP: the prompt is the identity at a neutral start, the additive part fills exactly the uncovered border,
the exported prompt (OpenCV, uint8) matches the torch prompter, the embedded encoder applies it only when asked,
and on a reduced camera shift ACAVP beats additive-only prompting."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from models.encoders.frame_prompt import FramePrompt
from training.methods.acavp.camera import export_prompt, fit_camera_prompt
from training.methods.acavp.digits import (
    SIDE,
    Camera,
    normalise,
    reference_frames,
    through_camera,
    train_frozen,
)
from training.methods.acavp.fit import FitConfig, accuracy, fit_prompt
from training.methods.acavp.prompter import ACAVPrompt, PadPrompt, PromptRanges

NEUTRAL = PromptRanges(scale_lo=0.5, scale_hi=1.5, scale_init=1.0)


def _randomised(size) -> ACAVPrompt:
    torch.manual_seed(0)
    prompt = ACAVPrompt(size)
    with torch.no_grad():
        for p in prompt.parameters():
            p.add_(0.3 * torch.randn_like(p))
        prompt.pattern.copy_(torch.rand_like(prompt.pattern))
    return prompt


def test_neutral_prompt_is_identity_and_gain_starts_at_one():
    torch.set_num_threads(1)
    x = torch.rand(2, 3, 20, 30)
    prompt = ACAVPrompt((20, 30), NEUTRAL)
    assert torch.allclose(prompt(x), x, atol=1e-5)
    gain = torch.sigmoid(ACAVPrompt((8, 8)).gain) * PromptRanges().gain
    assert torch.allclose(gain, torch.ones_like(gain))


def test_additive_part_fills_exactly_the_border_the_shrink_uncovers():
    torch.set_num_threads(1)
    ranges = PromptRanges(scale_lo=0.25, scale_hi=1.0, scale_init=0.5)  # content shrunk to half size
    prompt = ACAVPrompt((16, 16), ranges, colour=False)
    with torch.no_grad():
        prompt.pattern.fill_(1.0)
    out = prompt(torch.zeros(1, 3, 16, 16))[0, 0]  # black picture: output = pattern where uncovered
    assert torch.allclose(out[5:11, 5:11], torch.zeros(6, 6), atol=1e-6)  # the shrunk picture
    assert torch.allclose(out[:3], torch.ones(3, 16)) and torch.allclose(out[:, -3:], torch.ones(16, 3))
    pad = PadPrompt((16, 16), 3)
    with torch.no_grad():
        pad.pattern.fill_(1.0)
    pad_out = pad(torch.zeros(1, 3, 16, 16))[0, 0]
    assert pad_out.sum() == 16 * 16 - 10 * 10 and pad_out[3:13, 3:13].abs().sum() == 0


@pytest.mark.parametrize("size", [(24, 24), (36, 64)])
def test_exported_prompt_matches_the_torch_prompter(tmp_path, size):
    torch.set_num_threads(1)
    prompt = _randomised(size)
    frame = (np.random.default_rng(1).random((*size, 3)) * 255).astype(np.uint8)
    x = torch.from_numpy(frame).permute(2, 0, 1)[None].float() / 255.0
    with torch.no_grad():
        ref = prompt(x).clamp(0, 1)[0].permute(1, 2, 0).numpy() * 255.0
    applier = FramePrompt.load(export_prompt(prompt, tmp_path / "cam.npz"))
    out = applier(frame)
    assert out.dtype == np.uint8 and out.shape == frame.shape
    diff = np.abs(out.astype(np.float64) - ref)
    assert diff.mean() < 1.5 and diff.max() < 12  # OpenCV interpolates on a 1/32-pixel grid
    assert applier.warps and len(applier.digest) == 10
    with pytest.raises(FileNotFoundError):
        FramePrompt.load(tmp_path / "missing.npz")


def test_embedded_visual_encoder_applies_the_prompt_only_when_asked(tmp_path):
    from models.encoders.embedded import EmbeddedEncoder
    from models.encoders.visual import VisualConfig

    dim = ACAVPrompt((8, 8), NEUTRAL, affine=False)
    with torch.no_grad():
        dim.gain.fill_(math.log(0.25 / (6.0 - 0.25)))  # gain 0.25 everywhere: a much darker picture
    path = export_prompt(dim, tmp_path / "dim.npz")
    frame = np.full((90, 160, 3), 160, np.uint8)
    plain = EmbeddedEncoder(VisualConfig(pose=False, faces=False), audio_enabled=False)
    prompted = EmbeddedEncoder(VisualConfig(pose=False, faces=False, prompt=str(path)), audio_enabled=False)
    try:
        assert plain.visual.prompt is None and "prompt" not in plain.version
        extra = set(prompted.version.split("|")) - set(plain.version.split("|"))
        assert len(extra) == 1 and next(iter(extra)).startswith("prompt"), (plain.version, prompted.version)
        assert set(plain.version.split("|")) <= set(prompted.version.split("|"))
        bright = plain.visual.analyze([frame, frame], [0.0, 0.5])["brightness"]
        dark = prompted.visual.analyze([frame, frame], [0.0, 0.5])["brightness"]
        assert bright == pytest.approx(160, abs=1) and dark == pytest.approx(40, abs=1)
    finally:
        plain.close()
        prompted.close()


def test_acavp_beats_additive_prompting_on_a_shifted_camera():
    """Reduced experiment: fewer frames and epochs; the direction must hold."""
    torch.set_num_threads(1)
    x, y = reference_frames()
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    ref, fit, test = perm[:600], perm[600:800], perm[800:1100]
    frozen = train_frozen(x[ref], y[ref], 0, epochs=5)
    shifted = through_camera(x, Camera(), 1)
    zero_shot = accuracy(frozen, normalise, shifted[test], y[test])
    cfg = FitConfig(epochs=12)
    pad = fit_prompt(PadPrompt((SIDE, SIDE), 3), frozen, normalise, shifted[fit], y[fit], cfg, 0)
    frames = [(f.permute(1, 2, 0).numpy() * 255).round().astype(np.uint8) for f in shifted[fit]]
    acavp = fit_camera_prompt(frozen, normalise, frames, y[fit].tolist(), (SIDE, SIDE), config=cfg)
    acc_pad = accuracy(frozen, normalise, shifted[test], y[test], pad, clamp=False)
    acc_acavp = accuracy(frozen, normalise, shifted[test], y[test], acavp, clamp=False)
    assert acc_acavp >= acc_pad + 0.08, (acc_acavp, acc_pad)
    assert acc_acavp >= zero_shot + 0.15, (acc_acavp, zero_shot)
    assert float(torch.tanh(acavp.angle.detach()[0]) * acavp.ranges.angle) < -0.1  # it learned to turn the camera back
