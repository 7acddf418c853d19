"""PreFM's sizes and switches (`PreFMConfig`, `preset`) and the checkpoint format, without torch.

Kept apart from `modeling_prefm` (the torch network) so that inference through ONNX Runtime
(`models/prefm/runtime.py`) can rebuild a checkpoint's config from its export and never import torch.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

ATTENTION_KINDS = ("plain", "fan")  # models.layers.fan.ATTENTION_KINDS (that module imports torch)
CHECKPOINT_FORMAT = "foresight-prefm-v1"  # one .pt file: state dict + config dict + metadata, weights_only-safe
TASKS = ("avvp", "avel")
AUDIO_RATES = ("1fps", "clap_maps")
CLAP_FRAMES_PER_WINDOW = 64  # CLAP HTSAT maps: 64 rows per 10 s (a 2 x 32 frequency x time grid)


@dataclass
class PreFMConfig:
    """Sizes and switches of one PreFM network; stored inside every checkpoint."""

    audio_dim: int = 128
    visual_dim: int = 128
    num_classes: int = 25
    task: str = "avvp"  # "avvp": audio and visual heads (LLP); "avel": one audio-visual head (UnAV-100)
    d_model: int = 64
    ff: int = 256
    layers: int = 2
    heads: int = 4
    dropout: float = 0.1
    Lc: int = 10  # seconds of past in the window (the newest is the current second)
    Lf: int = 5  # pseudo-future steps predicted per modality
    st_dim: int | None = None  # optional second visual stream (R(2+1)D 512-d in PreFM's LLP setting)
    teacher_dim: int | None = None  # dimension of teacher features for distillation (ONE-PEACE: 1536)
    audio_rate: str = "1fps"  # "1fps": one vector per second; "clap_maps": 64 CLAP rows per 10 s
    use_future: bool = True
    positional: bool = False  # add sinusoidal "seconds ago" encodings (our extension; the paper has none)
    attention: str = "plain"  # "fan": FANformer's Fourier pre-projection in the encoder's attention (our extension)
    # Use only the first N visual dims (None = all). The embedded encoder's last 40 dims are a colour histogram
    # and a 4x4 thumbnail: scene statistics a small corpus lets the model memorise instead of objects.
    visual_keep: int | None = None
    class_names: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {self.task!r}")
        if self.audio_rate not in AUDIO_RATES:
            raise ValueError(f"audio_rate must be one of {AUDIO_RATES}, got {self.audio_rate!r}")
        if self.attention not in ATTENTION_KINDS:
            raise ValueError(f"attention must be one of {ATTENTION_KINDS}, got {self.attention!r}")
        if self.d_model % self.heads != 0:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by heads ({self.heads})")
        if self.audio_rate == "clap_maps" and self.Lc != 10:
            raise ValueError("audio_rate='clap_maps' assumes 10-s windows (Lc=10)")
        for name in ("audio_dim", "visual_dim", "num_classes", "d_model", "ff", "layers", "heads", "Lc", "Lf"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.class_names and len(self.class_names) != self.num_classes:
            raise ValueError(f"{len(self.class_names)} class names for {self.num_classes} classes")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PreFMConfig:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


def preset(name: str, **overrides: Any) -> PreFMConfig:
    """Named sizes: the paper's AVVP (LLP) and AVEL (UnAV-100) models, and our small embedded default."""
    presets: dict[str, dict[str, Any]] = {
        # PreFM On-AVVP: CLAP maps 768 / CLIP 768 / R(2+1)D 512, ONE-PEACE teacher 1536, d=128, ff=512.
        "paper_avvp": dict(task="avvp", num_classes=25, audio_dim=768, visual_dim=768, st_dim=512,
                           teacher_dim=1536, audio_rate="clap_maps", d_model=128, ff=512, layers=4, heads=8),
        # PreFM On-AVEL: CLAP maps 768 / CLIP 768, ONE-PEACE teacher 1536, d=256, ff=1024, 100 classes.
        "paper_avel": dict(task="avel", num_classes=100, audio_dim=768, visual_dim=768, st_dim=None,
                           teacher_dim=1536, audio_rate="clap_maps", d_model=256, ff=1024, layers=4, heads=8),
        # Our embedded default: 1-fps features of any size, 25 LLP classes, a quarter of the paper's width.
        "small": dict(task="avvp", num_classes=25, audio_dim=128, visual_dim=128, st_dim=None,
                      teacher_dim=None, audio_rate="1fps", d_model=64, ff=256, layers=2, heads=4),
    }
    if name not in presets:
        raise ValueError(f"unknown preset {name!r}; choose from {sorted(presets)}")
    return PreFMConfig(**{**presets[name], **overrides})
