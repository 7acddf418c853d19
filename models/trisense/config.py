"""The grounder's hyperparameters, readable without torch (the ONNX runtime path loads them from the export)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from models.layers import ATTENTION_KINDS


@dataclass
class TriSenseConfig:
    """Model hyperparameters; feature dims are whatever perception produces."""

    visual_dim: int = 512
    audio_dim: int = 128
    speech_dim: int = 384
    query_dim: int = 384
    d_model: int = 128
    n_heads: int = 4
    n_layers: int = 2
    ff_dim: int = 256
    dropout: float = 0.1
    coarse_dim: int = 64
    max_window_s: int = 128
    max_span_s: int = 64
    modality_dropout: float = 0.5
    fixed_modality_weights: bool = False
    attention: str = "plain"  # "fan": FANformer's Fourier pre-projection in the encoder's self-attention
    evidence_dim: int = 0  # >0: text-aligned evidence per second and modality (`models.trisense.evidence`)
    abstain_threshold: float | None = None  # top moment scores below this answer "not found" (chosen on val)
    raw_dropout: float = 0.0  # training: chance that a sample's modality keeps only its evidence, not its features
    query_dropout: float = 0.0  # training: chance that the model sees no query, only the evidence computed from it

    def __post_init__(self) -> None:
        if self.attention not in ATTENTION_KINDS:
            raise ValueError(f"attention must be one of {ATTENTION_KINDS}, got {self.attention!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> TriSenseConfig:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown TriSenseConfig keys: {sorted(unknown)}")
        return cls(**data)

    def modality_dim(self, name: str) -> int:
        return {"visual": self.visual_dim, "audio": self.audio_dim, "speech": self.speech_dim}[name]
