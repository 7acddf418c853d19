"""Token-grid images from scikit-image's bundled photographs: a tiny VQ tokenizer and disjoint splits.

AR-RAG works on the token grid of a VQ image tokenizer (LlamaGen VQ-16: 24x24 codes, 8-d code embeddings).
In miniature each 48x48 grey crop becomes a 12x12 grid of 4x4-pixel patches, each replaced by the nearest
of `vocab` k-means centroids; a code's embedding is its centroid reduced to 8 dimensions by PCA, as small as
LlamaGen's. Every picture is cut into 48x48 blocks and each block goes to exactly one split (retrieval
database, model training, validation, test), so no pixel of a validation or test crop is in the database.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from skimage import data as skdata
from skimage.color import rgb2gray
from skimage.transform import resize
from sklearn.cluster import MiniBatchKMeans
from sklearn.decomposition import PCA

PICTURES = ("astronaut", "brick", "camera", "chelsea", "coffee", "coins", "grass", "gravel", "moon", "page",
            "rocket", "text", "clock", "cell", "immunohistochemistry", "hubble_deep_field")
PATCH, GRID, CODE_DIM = 4, 12, 8
SPLITS = ("database", "train", "val", "test")


def grey_picture(name: str, side: int = 240) -> np.ndarray:
    """A bundled picture in grey levels [0, 1], resized so its shorter side is `side` pixels."""
    img = np.asarray(getattr(skdata, name)(), dtype=np.float64)
    if img.ndim == 3:
        img = rgb2gray(img[..., :3] / (255.0 if img.max() > 1 else 1.0))
    elif img.max() > 1:
        img = img / 255.0
    scale = side / min(img.shape)
    return resize(img, (round(img.shape[0] * scale), round(img.shape[1] * scale)), anti_aliasing=True)


def blocks(img: np.ndarray, size: int = PATCH * GRID) -> list[np.ndarray]:
    """Non-overlapping size x size crops covering the picture (the ragged border is dropped)."""
    return [img[r:r + size, c:c + size] for r in range(0, img.shape[0] - size + 1, size)
            for c in range(0, img.shape[1] - size + 1, size)]


def split_blocks(seed: int, shares: tuple[float, ...] = (0.6, 0.2, 0.1, 0.1)) -> dict[str, np.ndarray]:
    """Every block of every picture, each assigned to one split at random: {split: (n, 48, 48)}."""
    rng = np.random.default_rng(seed)
    out: dict[str, list[np.ndarray]] = {s: [] for s in SPLITS}
    for name in PICTURES:
        bs = blocks(grey_picture(name))
        which = rng.choice(len(SPLITS), size=len(bs), p=np.asarray(shares) / np.sum(shares))
        for b, w in zip(bs, which, strict=True):
            out[SPLITS[w]].append(b)
    return {s: np.stack(v).astype(np.float32) for s, v in out.items()}


def patches(crops: np.ndarray) -> np.ndarray:
    """(n, 48, 48) -> (n, 144, 16): the raster-ordered 4x4 patches of each crop."""
    n = crops.shape[0]
    p = crops.reshape(n, GRID, PATCH, GRID, PATCH).transpose(0, 1, 3, 2, 4)
    return p.reshape(n, GRID * GRID, PATCH * PATCH)


@dataclass
class Tokenizer:
    """centroids (vocab, 16) in pixel space; embeddings (vocab, 8), the codes' low-dimensional embedding."""

    centroids: np.ndarray
    embeddings: np.ndarray

    @property
    def vocab(self) -> int:
        return len(self.centroids)

    def encode(self, crops: np.ndarray) -> np.ndarray:
        """(n, 48, 48) -> (n, 12, 12) code ids."""
        p = patches(crops)
        d = (p ** 2).sum(-1, keepdims=True) - 2 * p @ self.centroids.T + (self.centroids ** 2).sum(-1)
        return d.argmin(-1).reshape(-1, GRID, GRID)

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """(n, 12, 12) code ids -> (n, 48, 48) pictures."""
        n = codes.shape[0]
        p = self.centroids[codes.reshape(n, -1)].reshape(n, GRID, GRID, PATCH, PATCH)
        return p.transpose(0, 1, 3, 2, 4).reshape(n, GRID * PATCH, GRID * PATCH)


def fit_tokenizer(crops: np.ndarray, vocab: int = 64, seed: int = 0) -> Tokenizer:
    """k-means codebook over the crops' patches; code embeddings = PCA of the centroids, scaled to unit RMS."""
    p = patches(crops).reshape(-1, PATCH * PATCH)
    km = MiniBatchKMeans(vocab, random_state=seed, n_init=3, batch_size=4096).fit(p)
    centroids = km.cluster_centers_.astype(np.float32)
    emb = PCA(CODE_DIM, random_state=seed).fit_transform(centroids).astype(np.float32)
    return Tokenizer(centroids, emb / np.sqrt((emb ** 2).mean()))
