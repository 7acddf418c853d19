"""The experiment's subject: a small PreFM trained on the synthetic PreFM corpus, and planted heads.

Clips come from `training.prefm.synthetic.make_clip` (events announced by cues, ramping evidence) and
stay in memory. After training, two heads get a known role: an *irrelevant* head has the W_O columns
that read its output set to zero (nothing it computes reaches the rest of the network), an
*interfering* head has those columns replaced by Gaussian noise of the same scale as the trained W_O,
so that its output is injected into the residual stream as a random direction that hurts the task.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from models.prefm.modeling_prefm import PreFM, PreFMConfig, preset
from training.methods.headgate.gates import attention_modules
from training.methods.headgate.tasks import prefm_batches, prefm_sample_loss
from training.prefm.data import Clip
from training.prefm.synthetic import make_clip

DIM = 32
CLASSES = 25
ACTIVE = 8


def _unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def synthetic_clips(count: int, world: int, draw: int, seconds: int = 30) -> list[Clip]:
    """Clips of the synthetic world `world` (prototypes, cues), sampled with generator seed `draw`."""
    rng = np.random.default_rng(world)
    protos = {"audio": _unit(rng, CLASSES, DIM), "visual": _unit(rng, CLASSES, DIM)}
    cues = {"audio": _unit(rng, CLASSES, DIM), "visual": _unit(rng, CLASSES, DIM)}
    teach = _unit(rng, CLASSES + 1, 8)
    rng = np.random.default_rng([world, draw])
    clips = []
    for i in range(count):
        c = make_clip(rng, protos, cues, teach, seconds, noise=0.4, lead=2, num_classes=CLASSES,
                      active_classes=ACTIVE)
        clips.append(Clip(name=f"syn_{draw}_{i}", audio=c["audio"], visual=c["visual"], st=None,
                          labels={"audio": c["label_audio"], "visual": c["label_visual"]}, teacher=None))
    return clips


def small_config() -> PreFMConfig:
    """Preset `small` (2 HAN layers, 4 heads, future modeling, recency encodings) at d_model 32."""
    return preset("small", audio_dim=DIM, visual_dim=DIM, d_model=32, ff=64, dropout=0.1, positional=True)


def train_prefm(clips: list[Clip], epochs: int, seed: int, progress=None) -> PreFM:
    """AdamW on the per-window NLL; returns the model in eval mode."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = PreFM(small_config())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    loss = prefm_sample_loss()
    epochs_iter = range(epochs) if progress is None else progress(range(epochs), desc="train PreFM")
    for _ in epochs_iter:
        model.train()
        for batch in prefm_batches(clips, model.config, 32, rng):
            opt.zero_grad()
            loss(model, batch).mean().backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
    return model.eval()


@dataclass(frozen=True)
class PlantedHead:
    module: str
    head: int
    role: str  # "irrelevant" or "interfering"


@torch.no_grad()
def plant(model: torch.nn.Module, heads: list[PlantedHead], seed: int) -> None:
    """Give each head its planted role by rewriting the W_O columns that read it (in place)."""
    found = dict(attention_modules(model))
    gen = torch.Generator().manual_seed(seed)
    for p in heads:
        mha = found[p.module]
        size = mha.embed_dim // mha.num_heads
        cols = slice(p.head * size, (p.head + 1) * size)
        w = mha.out_proj.weight
        if p.role == "irrelevant":
            w[:, cols] = 0.0
        elif p.role == "interfering":
            w[:, cols] = 10.0 * w.std() * torch.randn(w.shape[0], size, generator=gen)
        else:
            raise ValueError(f"can only plant irrelevant or interfering heads, got {p.role!r}")
