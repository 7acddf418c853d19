"""A miniature "web pool" of captioned images with known quality tiers, and a judge of generated images.

Alchemist curates a few thousand images out of billions of web images whose quality varies. In miniature:
scikit-learn's bundled 8x8 digits (caption = the digit) become a pool in which each sample is, by
construction, one of four tiers: clean (3), blurred and washed out (2), noisy (1), mis-captioned (0).
A disjoint set of clean digits trains the judge (a logistic-regression digit classifier), which measures
prompt alignment of generated images, as the paper measures relevance and quality of generations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.ndimage import gaussian_filter
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression

TIERS = {"clean": 3, "blurred": 2, "noisy": 1, "miscaptioned": 0}
N_CLASSES = 10


@dataclass
class Pool:
    """images (N, 64) in [-1, 1], captions (N,) digit ids, tiers (N,) 0..3 (higher is better)."""

    images: np.ndarray
    captions: np.ndarray
    tiers: np.ndarray

    def one_hot(self) -> np.ndarray:
        return np.eye(N_CLASSES, dtype=np.float32)[self.captions]


def _scaled(raw: np.ndarray) -> np.ndarray:
    return (raw / 8.0 - 1.0).astype(np.float32)


def digits_split(seed: int, n_judge: int = 500) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(pool source images, labels, judge images, labels): a random split of the 1,797 digits."""
    d = load_digits()
    order = np.random.default_rng(seed).permutation(len(d.target))
    judge, src = order[:n_judge], order[n_judge:]
    return _scaled(d.data[src]), d.target[src], _scaled(d.data[judge]), d.target[judge]


def degrade(image: np.ndarray, tier: int, rng: np.random.Generator) -> np.ndarray:
    """Apply the corruption of `tier` to one clean image (mis-captioning leaves the image clean)."""
    if tier == TIERS["blurred"]:
        blurred = gaussian_filter(image.reshape(8, 8), sigma=1.0).ravel()
        return (0.45 * blurred - 0.5).astype(np.float32)
    if tier == TIERS["noisy"]:
        return np.clip(image + rng.normal(0, 0.7, image.shape), -1.5, 1.5).astype(np.float32)
    return image


def make_pool(images: np.ndarray, labels: np.ndarray, n: int, seed: int,
              mix: tuple[float, float, float, float] = (0.25, 0.25, 0.25, 0.25)) -> Pool:
    """`n` pool samples; tier t drawn with probability mix[3 - t] (clean, blurred, noisy, mis-captioned)."""
    rng = np.random.default_rng(seed + 1)
    pick = rng.integers(0, len(labels), n)
    tiers = 3 - rng.choice(4, size=n, p=np.asarray(mix) / np.sum(mix))
    out, caps = np.empty((n, images.shape[1]), np.float32), labels[pick].copy()
    for i, (j, tier) in enumerate(zip(pick, tiers, strict=True)):
        out[i] = degrade(images[j], int(tier), rng)
        if tier == TIERS["miscaptioned"]:
            caps[i] = (caps[i] + rng.integers(1, N_CLASSES)) % N_CLASSES
    return Pool(out, caps, tiers.astype(np.int64))


class Judge:
    """Digit classifier trained on clean held-out digits: accuracy of generations = prompt alignment."""

    def __init__(self, images: np.ndarray, labels: np.ndarray) -> None:
        self.clf = LogisticRegression(max_iter=2000, C=0.5).fit(images, labels)
        self.reference = images

    def accuracy(self, images: np.ndarray, captions: np.ndarray) -> float:
        return float(np.mean(self.clf.predict(images) == captions))

    def fidelity(self, images: np.ndarray) -> float:
        """Mean distance to the nearest clean reference digit (lower = closer to real digits)."""
        d = ((images[:, None, :] - self.reference[None, :, :]) ** 2).sum(-1)
        return float(np.sqrt(d.min(1)).mean())
