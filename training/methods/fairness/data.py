"""Synthetic per-second embeddings from three cameras, shaped like Foresight's shared embeddings.

Numbers measured on these are synthetic, not a claim about real video. Each second has a binary event label
(say "a person is in view") and is seen by one camera. The embedding mixes, through fixed random projections
into 32 dimensions, (a) scene factors, one of which carries the event, (b) the camera's signature (colour
cast and exposure, a fixed mean; sensor noise, its spread) and (c) isotropic noise: like the colour
histogram, brightness and thumbnail parts of the embedded visual vector, the camera is in every dimension.
Cameras 0 and 2 share a mean signature and differ only in sensor noise, so telling them apart needs more
than means. The cameras see the event at different base rates (busier and quieter sites), so a classifier
that can recognise the camera uses it as a prior on ambiguous seconds: that is the gap a camera-blind
representation removes, at a small cost in accuracy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DIM, SCENE, SIGNATURE = 32, 6, 3
WORLD_SEED = 1234  # the projections and signatures: the same "installation" for every run seed


@dataclass(frozen=True)
class CameraSite:
    prevalence: float  # share of seconds showing the event
    signature: int  # which mean signature (colour cast, exposure) the camera has
    noise: float  # spread of the signature (sensor noise)


CAMERAS = (CameraSite(0.4, 0, 0.4), CameraSite(0.5, 1, 0.4), CameraSite(0.6, 0, 1.6))


@dataclass
class Embeddings:
    x: np.ndarray  # [N, DIM] float32
    y: np.ndarray  # [N] 0/1 event label
    camera: np.ndarray  # [N] camera index


def camera_embeddings(n: int, seed: int, separation: float = 1.6, cameras: tuple[CameraSite, ...] = CAMERAS,
                      ) -> Embeddings:
    """n seconds spread evenly over the cameras; `separation` is the event's shift along its scene factor."""
    world = np.random.default_rng(WORLD_SEED)
    mix_scene = world.normal(size=(SCENE, DIM)) / np.sqrt(SCENE)
    mix_sig = world.normal(size=(SIGNATURE, DIM)) / np.sqrt(SIGNATURE)
    means = world.normal(size=(2, SIGNATURE)) * 1.2
    rng = np.random.default_rng(seed)
    cam = rng.integers(0, len(cameras), size=n)
    prevalence = np.array([c.prevalence for c in cameras])[cam]
    y = (rng.random(n) < prevalence).astype(np.int64)
    scene = rng.normal(size=(n, SCENE))
    scene[:, 0] += separation * (y - 0.5)
    sig_mean = means[np.array([c.signature for c in cameras])[cam]]
    sig_noise = np.array([c.noise for c in cameras])[cam, None] * rng.normal(size=(n, SIGNATURE))
    x = scene @ mix_scene + (sig_mean + sig_noise) @ mix_sig + 0.3 * rng.normal(size=(n, DIM))
    return Embeddings(x.astype(np.float32), y, cam)
