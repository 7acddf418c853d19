"""One place to pick an encoder by name: `embedded` (offline default) or `hf` (CLIP + CLAP via transformers)."""

from __future__ import annotations

from collections.abc import Callable

from models.encoders.base import Encoder

DEFAULT_ENCODER = "embedded"


def _embedded(**kwargs) -> Encoder:
    from models.encoders.embedded import EmbeddedEncoder

    return EmbeddedEncoder(**kwargs)


def _hf(**kwargs) -> Encoder:
    from models.encoders.hf import HFEncoder

    return HFEncoder(**kwargs)


ENCODERS: dict[str, Callable[..., Encoder]] = {"embedded": _embedded, "hf": _hf}


def get_encoder(name: str = DEFAULT_ENCODER, **kwargs) -> Encoder:
    """An encoder instance. `hf` takes `clip_model=` and `clap_model=` (HF names or local folders)."""
    if name not in ENCODERS:
        raise ValueError(f"unknown encoder {name!r}; choose one of {sorted(ENCODERS)}")
    return ENCODERS[name](**kwargs)
