"""What a source recording is, and how encoded bytes become samples: shared by the first-round inventory
(`real_sources`) and the second (`extra_sources`), so that each reads this and neither reads the other's back."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Recording:
    """One source sound file: `key` names it uniquely (the split unit), `llp` is None for non-target sounds."""

    key: str
    source: str
    locator: str  # a filesystem path, or "rcc:<bundle>:<resource>", "cat:<catalogue>:<index>", "sf:<bank>:<b>/<p>"
    llp: str | None
    role: str


def decode_bytes(data: bytes, suffix: str, rate: int = 16_000) -> np.ndarray:
    """Float32 mono samples at `rate` of an encoded sound held in memory (`suffix` names its format)."""
    import tempfile

    from training.media.synth import load_audio

    with tempfile.NamedTemporaryFile(suffix=suffix) as fh:
        fh.write(data)
        fh.flush()
        return load_audio(fh.name, rate)
