"""AR-RAG's patch-level retrieval: L-shaped causal keys over a token-grid database, and what a query returns.

A database entry is one grid position (r, c) with r >= 1 and 1 <= c <= W - 2 of a database image: its key is
the concatenated code embeddings of the up-left, up, up-right and left neighbours (the causal "L" that is
known when (r, c) is generated in raster order), its value is the code at (r, c). A query with the same key
built from the image being generated returns the K nearest entries by squared L2 distance (brute force here,
FAISS IVF-PQ in the official code). DAiD (`daid.py`) turns them into a next-token distribution; FAiD
(`faid.py`) embeds the retrieved codes.
"""

from __future__ import annotations

import numpy as np
import torch

UNRETRIEVED = float("inf")


def has_key(grid: int) -> np.ndarray:
    """(grid, grid) bool: positions that have a full L-shaped context (row >= 1, 1 <= col <= grid - 2)."""
    ok = np.zeros((grid, grid), bool)
    ok[1:, 1:grid - 1] = True
    return ok


def l_keys(codes: np.ndarray, embeddings: np.ndarray) -> np.ndarray:
    """(n, H, W) codes -> (n, H, W, 4 * e) keys; positions without a full context get zeros (see `has_key`)."""
    n, h, w = codes.shape
    e = embeddings[codes]  # (n, H, W, e)
    keys = np.zeros((n, h, w, 4 * e.shape[-1]), np.float32)
    keys[:, 1:, 1:w - 1] = np.concatenate(
        [e[:, :-1, :-2], e[:, :-1, 1:-1], e[:, :-1, 2:], e[:, 1:, :-2]], axis=-1)
    return keys


class Database:
    """Keys and next codes of every keyed position of the database images."""

    def __init__(self, codes: np.ndarray, embeddings: np.ndarray) -> None:
        ok = has_key(codes.shape[1])
        self.image = torch.arange(len(codes)).repeat_interleave(int(ok.sum()))
        self.keys = torch.tensor(l_keys(codes, embeddings)[:, ok])
        self.keys = self.keys.reshape(-1, self.keys.shape[-1])
        self.values = torch.tensor(codes[:, ok].reshape(-1), dtype=torch.long)
        self.vocab = len(embeddings)
        self._sq = (self.keys ** 2).sum(-1)

    def __len__(self) -> int:
        return len(self.values)

    def search(self, queries: np.ndarray | torch.Tensor, k: int, exclude: torch.Tensor | None = None,
               chunk: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
        """(Q, 4e) queries -> (Q, k) squared distances (ascending) and the codes those entries hold.

        `exclude` (Q,) gives, per query, a database image whose entries must not be returned (a database
        image queried against its own database: leave-one-image-out), or -1."""
        q = torch.as_tensor(queries, dtype=torch.float32)
        dists, codes = [], []
        for i in range(0, len(q), chunk):
            part = q[i:i + chunk]
            d = (part ** 2).sum(-1, keepdim=True) - 2 * part @ self.keys.T + self._sq
            if exclude is not None:
                d = d.masked_fill(exclude[i:i + chunk, None] == self.image[None, :], UNRETRIEVED)
            top = torch.topk(d, min(k, len(self)), dim=-1, largest=False)
            dists.append(top.values.clamp_min(0))
            codes.append(self.values[top.indices])
        return torch.cat(dists), torch.cat(codes)


def retrieve_grids(db: Database, codes: np.ndarray, embeddings: np.ndarray, k: int,
                   own: np.ndarray | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Retrieval for every position of every grid: (n, H*W, k) distances (inf where no key) and codes.

    `own[i]`: grid i is database image own[i], whose entries it must not retrieve (leave-one-image-out)."""
    n, h, w = codes.shape
    ok = torch.tensor(has_key(h).reshape(-1))
    keys = torch.tensor(l_keys(codes, embeddings).reshape(n, h * w, -1))[:, ok]
    exclude = None if own is None else torch.as_tensor(own).repeat_interleave(keys.shape[1])
    d, v = db.search(keys.reshape(-1, keys.shape[-1]), k, exclude)
    dists = torch.full((n, h * w, d.shape[-1]), UNRETRIEVED)
    found = torch.zeros((n, h * w, d.shape[-1]), dtype=torch.long)
    dists[:, ok] = d.view(n, -1, d.shape[-1])
    found[:, ok] = v.view(n, -1, d.shape[-1])
    return dists, found


def nearest_per_code(dists: torch.Tensor, codes: torch.Tensor, vocab: int) -> torch.Tensor:
    """(..., vocab) distance of the nearest retrieved entry holding each code, inf where none was retrieved
    (the official retriever's `unique=True`: each code kept once, at its nearest occurrence)."""
    out = torch.full((*dists.shape[:-1], vocab), UNRETRIEVED)
    return out.scatter_reduce(-1, codes, dists, reduce="amin")


def faid_slots(dists: torch.Tensor, codes: torch.Tensor, vocab: int, k: int,
               unique: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """FAiD's K retrieved codes per query (..., k) and a mask of the filled slots: the k nearest entries
    (a code may repeat, so how often it was retrieved shows), or with `unique` the k nearest distinct codes."""
    if unique:
        top = torch.topk(nearest_per_code(dists, codes, vocab), k, dim=-1, largest=False)
        return top.indices, torch.isfinite(top.values)
    return codes[..., :k], torch.isfinite(dists[..., :k])
