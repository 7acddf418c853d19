"""Streaming speech-activity detection with Silero VAD (ONNX model shipped in the `silero-vad` wheel).

The model scores 32 ms windows; a hysteresis (start above `threshold`, end after `min_silence_s` below
`threshold - 0.15`) turns scores into speech spans on the source clock. Feeding is chunk by chunk, so it
runs live with no look-ahead beyond `min_silence_s`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RATE = 16_000
WINDOW = 512  # samples per Silero window at 16 kHz
CONTEXT = 64  # samples of the previous window the model sees before each one


def silero_session():
    """Silero VAD's ONNX model from the `silero-vad` wheel, opened as the package opens it (ONNX Runtime, one
    thread, CPU), without importing the package: its `__init__` imports torch, seconds a speech stage need not
    wait for."""
    import importlib.util
    from pathlib import Path

    import onnxruntime as ort

    spec = importlib.util.find_spec("silero_vad")
    if spec is None or not spec.submodule_search_locations:
        from models.errors import BadInput

        raise BadInput("speech detection needs the `silero-vad` package (pip install silero-vad)")
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / "silero_vad.onnx"
    opts = ort.SessionOptions()
    opts.inter_op_num_threads = 1
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"], sess_options=opts)


@dataclass
class SpeechSpan:
    start: float
    end: float


class StreamingVAD:
    def __init__(self, threshold: float = 0.5, min_silence_s: float = 0.4, min_speech_s: float = 0.25,
                 pad_s: float = 0.1):
        from models.shared import shared

        # One ONNX session per process, run directly: the package's wrapper converts every 32 ms window to and
        # from torch tensors, which cost more than the model itself. The recurrent state and the context
        # window are this stream's own; the arithmetic is the wrapper's (probabilities bit-identical, tested).
        self.session = shared("silero-vad", silero_session)
        self._rate = np.array(RATE, dtype=np.int64)
        self.threshold = threshold
        self.neg_threshold = max(threshold - 0.15, 0.01)
        self.min_silence_s = min_silence_s
        self.min_speech_s = min_speech_s
        self.pad_s = pad_s
        self.reset()

    def reset(self, at: float = 0.0) -> None:
        """Start a new stream (or a new stretch after a gap) whose next sample is at time `at`."""
        self._state = np.zeros((2, 1, 128), np.float32)
        self._context = np.zeros((1, CONTEXT), np.float32)
        self._pending = np.zeros(0, np.float32)
        self._t = at  # time of the first sample in _pending
        self._in_speech = False
        self._start = 0.0
        self._silence_since: float | None = None

    def feed(self, audio: np.ndarray, at: float) -> tuple[list[SpeechSpan], list[float]]:
        """Feed audio starting at time `at`; returns spans that ended and per-window probabilities."""
        if abs(at - (self._t + self._pending.size / RATE)) > 0.05:
            self.reset(at)
        buf = np.concatenate([self._pending, audio.astype(np.float32, copy=False)])
        n = buf.size // WINDOW
        closed: list[SpeechSpan] = []
        probs: list[float] = []
        for i in range(n):
            p = self.score(buf[i * WINDOW:(i + 1) * WINDOW])
            probs.append(p)
            span = self._step(p, self._t + i * WINDOW / RATE)
            if span is not None:
                closed.append(span)
        self._t += n * WINDOW / RATE
        self._pending = buf[n * WINDOW:]
        return closed, probs

    def score(self, window: np.ndarray) -> float:
        """Speech probability of the next 512-sample window of this stream."""
        x = np.concatenate([self._context, window.reshape(1, WINDOW)], axis=1)
        out, self._state = self.session.run(None, {"input": x, "state": self._state, "sr": self._rate})
        self._context = x[:, -CONTEXT:]
        return float(out[0, 0])

    def _step(self, p: float, t: float) -> SpeechSpan | None:
        if not self._in_speech:
            if p >= self.threshold:
                self._in_speech, self._start, self._silence_since = True, t, None
            return None
        if p >= self.neg_threshold:
            self._silence_since = None
            return None
        if self._silence_since is None:
            self._silence_since = t
        if t + WINDOW / RATE - self._silence_since >= self.min_silence_s:
            self._in_speech = False
            return self._span(self._start, self._silence_since)
        return None

    def _span(self, start: float, end: float) -> SpeechSpan | None:
        if end - start < self.min_speech_s:
            return None
        return SpeechSpan(max(0.0, start - self.pad_s), end + self.pad_s)

    @property
    def open_since(self) -> float | None:
        """Start of the speech span in progress, if any."""
        return self._start if self._in_speech else None

    def split_open_span(self, at: float) -> None:
        """Restart the span in progress at `at`: its part up to `at` was handled (a long monologue)."""
        if self._in_speech:
            self._start = at

    def close(self) -> SpeechSpan | None:
        """End of stream: close a span in progress."""
        if not self._in_speech:
            return None
        self._in_speech = False
        end = self._silence_since if self._silence_since is not None else self._t
        return self._span(self._start, end)
