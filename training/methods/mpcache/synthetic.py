"""A synthetic long KV cache with the two properties MPCache relies on, and the selections it is
compared with.

A "prompt" of T tokens is a sequence of segments; each segment is about one topic (of `topics`), so
keys are locally coherent: k_t = u_topic + 0.6 * noise, per head (unit topic vectors, noise of norm
about 1). A question names a few topics; the prompt ends with a window of queries about the question
(what the look-once stage reads), and each decoding query is mostly about 2 of the question's topics
plus, with a smaller weight, one arbitrary topic, so the prompt end predicts decoding attention well but
not perfectly. Values are Gaussian. Attention is exp(beta q . k) over the whole cache.

Baselines take as many tokens per head and step as MPCache chose: exact top-k of the true attention
(the oracle), k random tokens, and an attention sink plus the most recent tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from training.methods.mpcache.selector import softmax


@dataclass
class Prompt:
    keys: np.ndarray  # [H,T,d]
    values: np.ndarray  # [H,T,d]
    observers: np.ndarray  # [H,W,d] prompt-end queries
    decode: np.ndarray  # [S,H,d] decoding queries


def _unit(rng: np.random.Generator, *shape: int) -> np.ndarray:
    x = rng.standard_normal(shape)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def make_prompt(rng: np.random.Generator, tokens: int = 2048, heads: int = 4, d: int = 32, segment: int = 64,
                topics: int = 16, question: int = 4, observers: int = 410, steps: int = 5,
                beta: float = 8.0) -> Prompt:
    """One prompt; `observers` defaults to 20 % of 2048 tokens, MPCache's prompt-end window."""
    u = _unit(rng, heads, topics, d)
    seg_topic = rng.integers(topics, size=-(-tokens // segment))
    topic_of = np.repeat(seg_topic, segment)[:tokens]
    noise = rng.standard_normal((heads, tokens, d)) / np.sqrt(d)
    keys = u[:, topic_of] + 0.6 * noise
    values = rng.standard_normal((heads, tokens, d))
    asked = rng.choice(np.unique(seg_topic), size=min(question, len(np.unique(seg_topic))), replace=False)

    def queries(n: int, mix: list[tuple[np.ndarray, float]]) -> np.ndarray:
        q = sum(w * u[:, t] for t, w in mix)  # [H,n,d]
        return beta * (q + 0.3 * rng.standard_normal(q.shape) / np.sqrt(d))

    obs = queries(observers, [(rng.choice(asked, size=observers), 1.0)])
    dec = []
    for _ in range(steps):
        pair = rng.choice(asked, size=2, replace=False)
        mix = [(np.full(1, pair[0]), 0.5), (np.full(1, pair[1]), 0.35), (rng.integers(topics, size=1), 0.15)]
        dec.append(queries(1, mix)[:, 0])
    return Prompt(keys=keys, values=values, observers=obs, decode=np.stack(dec))


def attention_probs(query: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """[H,d], [H,T,d] -> [H,T] full softmax attention."""
    return softmax(np.einsum("hd,htd->ht", query, keys), axis=-1)


def mass_and_error(query: np.ndarray, keys: np.ndarray, values: np.ndarray, chosen: np.ndarray) -> tuple[float, float]:
    """Mean over heads of the true attention mass on the chosen tokens, and the relative error of the
    attention output when softmax runs over the chosen tokens only."""
    probs = attention_probs(query, keys)
    exact = np.einsum("ht,htd->hd", probs, values)
    sparse = np.where(chosen, probs, 0.0)
    approx = np.einsum("ht,htd->hd", sparse / sparse.sum(-1, keepdims=True), values)
    err = np.linalg.norm(approx - exact, axis=-1) / np.linalg.norm(exact, axis=-1)
    return float(sparse.sum(-1).mean()), float(err.mean())


def oracle(probs: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per head, the counts[h] tokens of largest true attention."""
    chosen = np.zeros(probs.shape, bool)
    for h, k in enumerate(counts):
        chosen[h, np.argsort(-probs[h])[:k]] = True
    return chosen


def random_tokens(rng: np.random.Generator, tokens: int, counts: np.ndarray) -> np.ndarray:
    chosen = np.zeros((len(counts), tokens), bool)
    for h, k in enumerate(counts):
        chosen[h, rng.choice(tokens, size=k, replace=False)] = True
    return chosen


def sink_and_recent(tokens: int, counts: np.ndarray, sink: int = 16) -> np.ndarray:
    """The first `sink` tokens and the newest counts[h] - sink ones (StreamingLLM-style window)."""
    chosen = np.zeros((len(counts), tokens), bool)
    for h, k in enumerate(counts):
        chosen[h, :min(sink, k)] = True
        chosen[h, tokens - max(0, k - sink):] = True
    return chosen
