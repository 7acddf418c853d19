"""One thread count for every numeric library in every runner, so that the same input gives the same output.

The CLI, the API's job workers, batch and the Ray stage hosts used to differ in how many threads OpenBLAS
(numpy) and OpenMP used: the same clip came out with other Whisper word probabilities through the API (one
thread in a Ray task) than through the CLI (one per core), because a matrix product summed in another order.
`pin_threads` sets the count through the environment (read by libraries loaded later and by child processes:
the local Ray cluster, its workers), through threadpoolctl (libraries already loaded) and in torch when it is
already imported (torch reads `OMP_NUM_THREADS` when it starts otherwise). `FORESIGHT_THREADS` changes the
count for every runner at once; the default is one, which is also the house rule for Ray actors.
"""

from __future__ import annotations

import os
import sys

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS")


def thread_count() -> int:
    """`FORESIGHT_THREADS` (a whole number of at least 1), else 1."""
    raw = os.environ.get("FORESIGHT_THREADS", "").strip()
    return int(raw) if raw.isdigit() and int(raw) >= 1 else 1


def thread_environment(n: int | None = None) -> dict[str, str]:
    """The variables a process (or a Ray worker's runtime_env) needs to run with `n` threads."""
    n = n or thread_count()
    return {"FORESIGHT_THREADS": str(n), **{name: str(n) for name in THREAD_VARIABLES}}


def pin_threads(n: int | None = None) -> int:
    """Pin this process (and what it starts) to `n` numeric threads; returns `n`. Idempotent and cheap."""
    n = n or thread_count()
    os.environ.update(thread_environment(n))
    from threadpoolctl import threadpool_limits

    threadpool_limits(n)
    torch = sys.modules.get("torch")
    if getattr(getattr(torch, "__spec__", None), "_initializing", False):
        torch = None  # another thread is importing it; that stage pins again once it has loaded (inline build)
    if torch is not None and torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n
