"""MPCache as the grounder's memory over long archives (`models.trisense.memory.SecondSelector`).

The stored seconds of a source are the cache: per second one unit coarse embedding per modality, so the
three modalities play MPCache's heads, and the query's per-modality coarse embedding is the decoding
query. Both stages map directly:

* look-once static eviction when a source is indexed. It needs queries that stand for what will be
  asked (the paper uses the prompt's last 20 % of queries). An archive has no prompt, so pass
  `probes`, e.g. the app's standing queries; without probes every second is kept;
* query-aware selection: clusters of s1 = 16 and s2 = 8 seconds; one selection shared by the
  modalities (a cluster's score is its best over the modalities present), since the fine model reads
  whole seconds; the top clusters up to `budget` of the source's seconds, plus the first and the newest.

    from training.methods.mpcache import MPCacheSelector
    index = GroundingIndex(db, grounder, selector=MPCacheSelector.for_grounder(grounder, budget=0.12))
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from training.methods.mpcache.selector import MPCacheConfig, hierarchical_select, static_keep


class MPCacheSelector:
    """Selects stored seconds with MPCache; `budget` is the fraction of a source's seconds read per query."""

    def __init__(self, budget: float = 0.12, s1: int = 16, probes: np.ndarray | None = None,
                 keep_static: float = 0.55, scale: float = 10.0, alpha: float = 0.6) -> None:
        if not 0 < budget <= 1:
            raise ValueError("budget must lie in (0, 1]")
        keep = keep_static if probes is not None else 1.0
        if budget > keep:
            raise ValueError("budget cannot exceed the fraction the static stage keeps")
        self.cfg = MPCacheConfig(s1=s1, s2=s1 // 2, ratio1=0.5, ratio2=budget / keep, alpha=alpha, keep_static=keep)
        self.probes = None if probes is None else np.asarray(probes, dtype=np.float32)  # [P,3,k]
        self.scale = scale

    @classmethod
    @torch.no_grad()
    def for_grounder(cls, grounder: Any, probes: list[str] | None = None, **options: Any) -> MPCacheSelector:
        """A selector using the grounder's coarse temperature, with probe texts embedded by its encoders."""
        coarse = grounder.model.coarse
        vecs = None
        if probes:
            qv = torch.from_numpy(np.stack([grounder.embed_query(p) for p in probes]).astype(np.float32))
            vecs = coarse.embed_query(qv).numpy()
        return cls(probes=vecs, scale=float(coarse.logit_scale), **options)

    def compress(self, keys: np.ndarray, present: np.ndarray) -> np.ndarray:
        """Look-once: keep the `keep_static` share of seconds the probes attend to most (all without probes)."""
        kept = np.zeros(keys.shape[1], dtype=bool)
        if self.probes is None or keys.shape[1] == 0:
            kept[:] = True
            return kept
        observers = self.scale * np.transpose(self.probes, (1, 0, 2))  # [3,P,k]
        kept[static_keep(keys, observers, self.cfg.keep_static, present)] = True
        return kept

    def select(self, query: np.ndarray, keys: np.ndarray, present: np.ndarray) -> np.ndarray:
        """Seconds (among the kept ones) to read for this query: bool [T']."""
        return hierarchical_select(np.asarray(query), keys, self.cfg, present=present, joint=True)[0]
