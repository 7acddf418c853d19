"""PreFM's own encoders through `transformers`: CLIP image embeddings for frames, CLAP (HTSAT) audio embeddings.

PreFM's released features are 768-d per second: CLIP ViT-L/14 projected image embeddings (`image_embeds`) and
the CLAP HTSAT audio tower's pooled output. No package carries those weights, so a user points at a Hugging
Face model name (found in the local HF cache) or a local folder. Loading never downloads unless asked
(`allow_download=True`), and a checkpoint that lacks the expected weights is refused instead of being filled
with random values.

Per second: the CLIP embedding is the mean over the sampled frames; the CLAP embedding is computed from the
second's audio resampled to 48 kHz (the extractor repeat-pads it to its 10 s window, as CLAP was trained).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from models.encoders.base import SecondFeatures
from models.errors import BadInput

CLAP_RATE = 48_000
DEFAULT_CLIP = "openai/clip-vit-large-patch14"
DEFAULT_CLAP = "laion/clap-htsat-unfused"


def _missing_model(kind: str, name: str, exc: Exception) -> BadInput:
    return BadInput(
        f"{kind} model {name!r} is not available offline ({type(exc).__name__}): put its Hugging Face files "
        f"(config.json, weights, preprocessor_config.json) in a folder and pass that path, or download it once "
        f"into the HF cache (huggingface-cli download {name}) on a machine with network access")


def _local_only(allow_download: bool) -> bool:
    return not allow_download or os.environ.get("HF_HUB_OFFLINE") == "1"


def _checked(loaded: tuple, kind: str, name: str):
    model, info = loaded
    missing = [k for k in info.get("missing_keys", []) if "position_ids" not in k]
    missing += [str(k) for k in info.get("mismatched_keys", [])]
    if missing:
        raise BadInput(f"{name!r} does not hold {kind} weights ({len(missing)} missing, e.g. {missing[0]})")
    return model.eval()


def _model_id(name: str) -> str:
    """Name plus a short digest of the config, so a different checkpoint under one name is a new version."""
    path = Path(name)
    cfg = path / "config.json"
    if cfg.is_file():
        return f"{path.name}:{hashlib.sha256(cfg.read_bytes()).hexdigest()[:10]}"
    return name


class ClipFrameEncoder:
    """CLIP vision tower + projection; one vector per second (mean over that second's frames)."""

    def __init__(self, name: str = DEFAULT_CLIP, allow_download: bool = False):
        import torch
        from transformers import AutoConfig, AutoImageProcessor, CLIPVisionModelWithProjection

        torch.set_num_threads(1)
        local = _local_only(allow_download)
        try:
            config = AutoConfig.from_pretrained(name, local_files_only=local)
            if config.model_type == "clip":  # full CLIP: the projection size is set on the outer config
                vision = config.vision_config
                vision.projection_dim = config.projection_dim
            elif config.model_type == "clip_vision_model":
                vision = config
            else:
                raise BadInput(f"{name!r} is a {config.model_type!r} model, not CLIP")
            self.processor = AutoImageProcessor.from_pretrained(name, local_files_only=local)
            loaded = CLIPVisionModelWithProjection.from_pretrained(name, config=vision, local_files_only=local,
                                                                   output_loading_info=True)
        except (OSError, RuntimeError) as exc:
            raise _missing_model("CLIP", name, exc) from None
        self.model = _checked(loaded, "CLIP vision", name)
        self.dim = int(self.model.config.projection_dim)
        self.name = name

    def encode(self, frames: list[np.ndarray]) -> np.ndarray:
        import torch

        pixels = self.processor(images=[np.ascontiguousarray(f) for f in frames], return_tensors="pt")["pixel_values"]
        with torch.no_grad():
            embeds = self.model(pixel_values=pixels).image_embeds
        return embeds.mean(0).numpy().astype(np.float32)


class ClapAudioEncoder:
    """CLAP audio tower (HTSAT); the pooled output of one second of audio."""

    def __init__(self, name: str = DEFAULT_CLAP, allow_download: bool = False):
        import torch
        from transformers import AutoConfig, ClapAudioModel, ClapFeatureExtractor, ClapModel

        torch.set_num_threads(1)
        local = _local_only(allow_download)
        try:
            config = AutoConfig.from_pretrained(name, local_files_only=local)
            self.extractor = ClapFeatureExtractor.from_pretrained(name, local_files_only=local)
            if config.model_type == "clap":  # full CLAP checkpoint: keep only the audio tower
                model = _checked(ClapModel.from_pretrained(name, local_files_only=local, output_loading_info=True),
                                 "CLAP", name)
                self.model = model.audio_model
                audio_config = config.audio_config
            elif config.model_type == "clap_audio_model":
                self.model = _checked(ClapAudioModel.from_pretrained(
                    name, local_files_only=local, output_loading_info=True), "CLAP audio", name)
                audio_config = config
            else:
                raise BadInput(f"{name!r} is a {config.model_type!r} model, not CLAP")
        except (OSError, RuntimeError) as exc:
            raise _missing_model("CLAP", name, exc) from None
        self.fusion = bool(audio_config.enable_fusion)
        self.dim = int(audio_config.hidden_size)
        self.name = name

    def encode(self, audio_16k: np.ndarray) -> np.ndarray:
        import torch
        from scipy.signal import resample_poly

        wave = resample_poly(audio_16k.astype(np.float32), CLAP_RATE // 16_000, 1).astype(np.float32)
        feats = self.extractor(wave, sampling_rate=CLAP_RATE, return_tensors="pt",
                               truncation="fusion" if self.fusion else "rand_trunc")
        with torch.no_grad():
            out = self.model(input_features=feats["input_features"], is_longer=feats.get("is_longer"))
        return out.pooler_output[0].numpy().astype(np.float32)


class HFEncoder:
    """The `hf` encoder: CLIP frames + CLAP audio per second, PreFM's feature space when given its weights."""

    name = "hf"

    def __init__(self, clip_model: str = DEFAULT_CLIP, clap_model: str = DEFAULT_CLAP, allow_download: bool = False):
        self.clip = ClipFrameEncoder(clip_model, allow_download)
        self.clap = ClapAudioEncoder(clap_model, allow_download)
        self.visual_dim, self.audio_dim = self.clip.dim, self.clap.dim
        self.version = f"hf-v1|clip={_model_id(clip_model)}|clap={_model_id(clap_model)}"

    def reset(self) -> None:
        """Stateless per second; present for the common encoder interface."""

    def encode_audio(self, audio_1s: np.ndarray | None) -> np.ndarray:
        if audio_1s is None or np.asarray(audio_1s).size == 0:
            return np.zeros(self.audio_dim, np.float32)
        return self.clap.encode(np.asarray(audio_1s))

    def encode_visual(self, frames: list[np.ndarray], times: list[float] | None = None) -> np.ndarray:
        if not frames:
            return np.zeros(self.visual_dim, np.float32)
        return self.clip.encode(frames)

    def encode_second(self, frames: list[np.ndarray], frame_times: list[float] | None, audio: np.ndarray | None,
                      start: float, index: int = 0) -> SecondFeatures:
        has_audio = audio is not None and np.asarray(audio).size > 0
        return SecondFeatures(index=index, start=start, audio=self.encode_audio(audio),
                              visual=self.encode_visual(frames), audio_available=has_audio,
                              visual_available=bool(frames))
