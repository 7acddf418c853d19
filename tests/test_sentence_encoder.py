"""The one sentence encoder (`models/sentences.py`): its bounded cache, a stream's own cache, and a process
that ends while the model is still loading."""

from __future__ import annotations

import subprocess
import sys


def test_the_sentence_cache_keeps_the_recently_used_vectors_only():
    """The grounder's and the safety monitor's sentence vectors come from one encoder class
    (`models/sentences.py`) whose cache keeps its `cache_size` most recently used vectors: a camera's observation
    log says new things for days. A stream's copy (`for_stream`) has a cache of its own."""
    import numpy as np

    from models.sentences import SentenceEncoder

    encoder = SentenceEncoder(cache_size=3)
    texts = [f"a person is standing near the car for about {n} seconds." for n in range(5)]
    first = encoder.encode(texts)
    assert list(encoder._cache) == texts[2:]  # the newest three
    encoder.encode(texts[2])  # used again: the most recent now
    encoder.encode(["a dog barks."])
    assert list(encoder._cache) == [texts[4], texts[2], "a dog barks."]
    again = encoder.encode(texts)  # evicted ones are embedded again, the same vectors
    assert np.allclose(first, again, atol=1e-5) and np.allclose(np.linalg.norm(again, axis=1), 1.0, atol=1e-4)
    assert not encoder.encode(" ").any()  # nothing said: zeros
    stream = encoder.for_stream()
    stream.encode(["a car alarm sounds."])
    assert "a car alarm sounds." in stream._cache and "a car alarm sounds." not in encoder._cache
    passages = encoder.encode_passages(["A dog barks. A person is running.", ""])
    assert passages.shape == (2, encoder.dim) and np.isclose(np.linalg.norm(passages[0]), 1.0, atol=1e-4)



def test_a_process_that_ends_while_the_model_loads_exits_cleanly():
    """The CLI refuses a camera without a picture right after the stages were built, while MiniLM may still be
    loading on its thread: with that thread a daemon, the process aborted at exit ("terminate called without an
    active exception", exit -6) instead of exiting 2. Ended at several moments of the load, it exits 2 each time."""
    for delay in (0.0, 0.1, 0.2, 0.25, 0.3, 0.4):
        code = ("import time\nfrom models.sentences import SentenceEncoder\nSentenceEncoder()\n"
                f"time.sleep({delay})\nraise SystemExit(2)\n")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, (delay, done.returncode, done.stderr[-300:])
