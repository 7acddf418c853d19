"""MPCache (Zeng et al., NeurIPS 2025): look-once static KV eviction plus hierarchical cluster selection.

`selector.py` holds the algorithm, `cost.py` its cost under secret sharing, `memory.py` its use as the
grounder's memory over long archives (`MPCacheSelector`), `experiment.py` the miniature.
"""

from training.methods.mpcache.memory import MPCacheSelector
from training.methods.mpcache.selector import MPCacheConfig, hierarchical_select, static_keep

__all__ = ["MPCacheConfig", "MPCacheSelector", "hierarchical_select", "static_keep"]
