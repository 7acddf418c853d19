"""DAiD: Distribution-Augmentation in Decoding, AR-RAG's training-free variant.

At every raster step whose L-shaped context exists, the K nearest database entries give
p_ret[v] = sum_{k: v_k = v} exp(-d_k / tau) / sum_m exp(-d_m / tau) (with `unique`, each code counts once,
at its nearest entry, as the official retriever does) and the next token is drawn from
p = (1 - lam) * p_model + lam * p_ret; elsewhere from p_model. lam, tau and `unique` are chosen on a
validation split (`tune`), never on the test split.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import torch

from training.methods.arrag.model import TokenGPT, nll_per_token
from training.methods.arrag.retrieval import Database, has_key, l_keys, nearest_per_code


def retrieval_distribution(dists: torch.Tensor, codes: torch.Tensor, vocab: int, tau: float,
                           unique: bool = True) -> torch.Tensor:
    """p_ret over the vocabulary for (..., K) retrieved distances and codes; all zeros where nothing was
    retrieved (all distances inf)."""
    if unique:
        p = torch.softmax(-nearest_per_code(dists, codes, vocab) / tau, dim=-1)
    else:
        w = torch.softmax(-dists / tau, dim=-1)
        p = torch.zeros(*dists.shape[:-1], vocab).scatter_add(-1, codes, w)
    return p.nan_to_num(0.0)


def daid_mix(p_model: torch.Tensor, p_ret: torch.Tensor, lam: float, keyed: torch.Tensor) -> torch.Tensor:
    """(1 - lam) p_model + lam p_ret where `keyed` (broadcast over the leading dims), p_model elsewhere."""
    return torch.where(keyed.unsqueeze(-1), (1 - lam) * p_model + lam * p_ret, p_model)


@dataclass(frozen=True)
class DaidSetting:
    lam: float
    tau: float
    unique: bool


def tune(p_model: torch.Tensor, dists: torch.Tensor, codes: torch.Tensor, targets: torch.Tensor,
         lams: tuple[float, ...], taus: tuple[float, ...], uniques: tuple[bool, ...] = (True, False)
         ) -> tuple[DaidSetting, float]:
    """The (lam, tau, unique) with the lowest NLL of `targets` (validation data) and that NLL.

    p_model (n, N, V), dists/codes (n, N, K), targets (n, N)."""
    keyed = torch.tensor(has_key(int(round(p_model.shape[1] ** 0.5))).reshape(-1))
    best, best_nll = DaidSetting(0.0, 1.0, True), nll_per_token(p_model, targets)
    for tau, unique in itertools.product(taus, uniques):
        p_ret = retrieval_distribution(dists, codes, p_model.shape[-1], tau, unique)
        for lam in lams:
            nll = nll_per_token(daid_mix(p_model, p_ret, lam, keyed), targets)
            if nll < best_nll:
                best, best_nll = DaidSetting(lam, tau, unique), nll
    return best, best_nll


@torch.no_grad()
def generate(model: TokenGPT, db: Database, embeddings: np.ndarray, n: int, setting: DaidSetting,
             neighbours: int = 32, seed: int = 0) -> np.ndarray:
    """Sample n token grids in raster order with DAiD: at each keyed step the L-shaped key is built from the
    tokens generated so far, the database is searched and the two distributions are mixed."""
    gen = torch.Generator().manual_seed(seed)
    g = model.grid
    keyed = has_key(g)
    codes = np.zeros((n, g, g), dtype=np.int64)
    model.eval()
    for j in range(g * g):
        r, c = divmod(j, g)
        p = torch.softmax(model(torch.tensor(codes.reshape(n, -1)))[:, j], dim=-1)
        if keyed[r, c] and setting.lam > 0:
            d, v = db.search(l_keys(codes, embeddings)[:, r, c], neighbours)
            p = (1 - setting.lam) * p + setting.lam * retrieval_distribution(d, v, model.vocab, setting.tau,
                                                                              setting.unique)
        codes[:, r, c] = torch.multinomial(p, 1, generator=gen).squeeze(1).numpy()
    return codes
