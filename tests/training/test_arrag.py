"""AR-RAG: L-shaped keys and exact search, DAiD's mixture, FAiD's causality and its use of retrieval."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from training.methods.arrag.daid import DaidSetting, daid_mix, generate, retrieval_distribution, tune
from training.methods.arrag.faid import FAiD
from training.methods.arrag.model import TokenGPT, fit, flat, nll_per_token
from training.methods.arrag.retrieval import Database, faid_slots, has_key, l_keys, retrieve_grids
from training.methods.arrag.tokens import fit_tokenizer, grey_picture


@pytest.fixture(autouse=True)
def _threads():
    torch.set_num_threads(1)


def _stripes(n: int, grid: int, vocab: int, seed: int) -> np.ndarray:
    """Diagonal stripe grids: code (r + c * step + phase) % period, so the L-context predicts the next code."""
    rng = np.random.default_rng(seed)
    r, c = np.mgrid[:grid, :grid]
    out = []
    for _ in range(n):
        period, step, phase = rng.integers(3, 6), rng.integers(1, 3), rng.integers(0, 6)
        out.append(((r + c * step + phase) % period) + rng.integers(0, vocab - 6) * (rng.random() < 0.5))
    return np.stack(out).astype(np.int64) % vocab


def test_l_keys_concatenate_the_causal_neighbours():
    emb = np.random.default_rng(0).normal(size=(10, 8)).astype(np.float32)
    codes = np.random.default_rng(1).integers(0, 10, (2, 5, 5))
    keys = l_keys(codes, emb)
    r, c = 3, 2
    want = np.concatenate([emb[codes[1, r - 1, c - 1]], emb[codes[1, r - 1, c]], emb[codes[1, r - 1, c + 1]],
                           emb[codes[1, r, c - 1]]])
    assert np.allclose(keys[1, r, c], want)
    assert not has_key(5)[0].any() and not has_key(5)[:, 0].any() and not has_key(5)[:, -1].any()


def test_search_is_exact_and_leave_one_out_skips_own_entries():
    rng = np.random.default_rng(0)
    emb = rng.normal(size=(12, 8)).astype(np.float32)
    codes = rng.integers(0, 12, (6, 6, 6))
    db = Database(codes, emb)
    q = db.keys[:40]
    d, v = db.search(q, 3)
    assert torch.allclose(d[:, 0], torch.zeros(40), atol=1e-4)  # each key finds itself
    brute = torch.cdist(q, db.keys) ** 2
    assert torch.allclose(d, brute.topk(3, largest=False).values, atol=1e-3)
    dists, _ = retrieve_grids(db, codes[:2], emb, 3, own=np.array([0, 1]))
    assert (dists[:, torch.tensor(has_key(6).reshape(-1))] > 1e-3).all()
    assert torch.isinf(dists[:, 0]).all()


def test_daid_mixture_and_tuning_on_stripes():
    vocab, grid = 16, 8
    emb = np.random.default_rng(0).normal(size=(vocab, 8)).astype(np.float32)
    db_codes, test = _stripes(200, grid, vocab, 0), _stripes(20, grid, vocab, 1)
    db = Database(db_codes, emb)
    dists, codes = retrieve_grids(db, test, emb, 16)
    p_ret = retrieval_distribution(dists, codes, vocab, tau=4.0, unique=False)
    keyed = torch.tensor(has_key(grid).reshape(-1))
    assert torch.allclose(p_ret[:, keyed].sum(-1), torch.ones(20, int(keyed.sum())))
    assert (p_ret[:, ~keyed] == 0).all()
    uniform = torch.full((20, grid * grid, vocab), 1.0 / vocab)
    assert torch.equal(daid_mix(uniform, p_ret, 0.0, keyed), uniform)
    target = flat(test)
    setting, nll = tune(uniform, dists, codes, target, (0.25, 0.5, 0.75), (1.0, 4.0))
    assert setting.lam > 0 and nll < 0.8 * nll_per_token(uniform, target)


def test_faid_is_causal_and_retrieval_reaches_only_its_position():
    torch.manual_seed(0)
    base = TokenGPT(16, grid=6, width=16, depth=2, dropout=0.0)
    faid = FAiD(base)
    faid.eval()
    x = torch.randint(0, 16, (2, 36))
    ret, filled = torch.randint(0, 16, (2, 36, 3)), torch.ones(2, 36, 3, dtype=torch.bool)
    out = faid(faid.prefix(x), ret, filled)
    x2 = x.clone()
    x2[:, 20] = (x2[:, 20] + 1) % 16
    out2 = faid(faid.prefix(x2), ret, filled)
    assert torch.allclose(out[:, :21], out2[:, :21], atol=1e-5) and not torch.allclose(out[:, 21:], out2[:, 21:])
    ret2 = ret.clone()
    ret2[:, 20] = (ret2[:, 20] + 1) % 16
    out3 = faid(faid.prefix(x), ret2, filled)
    changed = (out3 - out).abs().amax(-1) > 1e-6
    assert changed[:, 20].all() and changed.sum() == 2
    assert all(not p.requires_grad for p in base.blocks.parameters())


def test_faid_learns_to_use_retrieved_codes():
    """Retrieval that holds the answer 70% of the time: FAiD must beat its retrieval-withheld twin."""
    torch.manual_seed(0)
    vocab, grid = 16, 6
    base = TokenGPT(vocab, grid=grid, width=24, depth=2, dropout=0.0)
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(0, vocab, (64, grid * grid), generator=gen)
    hit = torch.rand(64, grid * grid, generator=gen) < 0.7
    ret = torch.where(hit, x, torch.randint(0, vocab, x.shape, generator=gen)).unsqueeze(-1).repeat(1, 1, 2)
    nll = {}
    for withheld in (False, True):
        faid = FAiD(TokenGPT(vocab, grid=grid, width=24, depth=2, dropout=0.0))
        faid.base.load_state_dict(base.state_dict())
        h = faid.prefix(x)
        filled = torch.full(ret.shape, not withheld)

        def loss(idx, faid=faid, h=h, filled=filled):
            return F.cross_entropy(faid(h[idx], ret[idx], filled[idx]).reshape(-1, vocab), x[idx].reshape(-1))

        fit(faid, faid.trainable(), lambda g: (torch.randint(0, 64, (16,), generator=g),), loss, 40, 1e-2)
        with torch.no_grad():
            nll[withheld] = nll_per_token(torch.softmax(faid(h, ret, filled), -1), x)
    assert nll[False] < 0.75 * nll[True]


def test_generation_with_full_retrieval_draws_retrieved_codes():
    vocab, grid = 16, 6
    emb = np.random.default_rng(0).normal(size=(vocab, 8)).astype(np.float32)
    db = Database(_stripes(50, grid, vocab, 0), emb)
    model = TokenGPT(vocab, grid=grid, width=16, depth=1)
    out = generate(model, db, emb, 3, DaidSetting(lam=1.0, tau=0.01, unique=True), neighbours=1)
    assert out.shape == (3, grid, grid)
    keys = l_keys(out, emb)[:, has_key(grid)].reshape(-1, 32)
    _, nearest = db.search(keys, 1)
    assert np.array_equal(nearest[:, 0].numpy(), out[:, has_key(grid)].reshape(-1))


def test_tokenizer_round_trip_on_a_real_picture():
    img = grey_picture("brick", side=96)[:96, :96].astype(np.float32)
    crops = np.stack([img[:48, :48], img[48:, 48:]])
    tok = fit_tokenizer(crops, vocab=16)
    codes = tok.encode(crops)
    assert codes.shape == (2, 12, 12) and tok.embeddings.shape == (16, 8)
    assert float(((tok.decode(codes) - crops) ** 2).mean()) < float(crops.var())
    slots, filled = faid_slots(torch.tensor([[0.5, 1.0, np.inf]]), torch.tensor([[3, 3, 5]]), 16, 2, unique=True)
    assert slots[0, 0] == 3
    assert filled.tolist() == [[True, False]]
