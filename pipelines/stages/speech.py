"""Speech: voice activity on every second (`SpeechStage`), Whisper on each finished speech span (`TranscribeStage`).

They are two nodes of the stage graph so that the VAD of the next seconds, and the audio stage that takes its
window probabilities, go on while Whisper transcribes a span: on the speech + tags path the two in one node were
the critical path. The speech stage cuts each piece of audio Whisper should hear (with its pre- and post-roll)
and hands it on; the transcribe stage runs Whisper on it. Transcripts are those of one node doing both.
"""

from __future__ import annotations

import time

import numpy as np

from models.audio.asr import FasterWhisperRecognizer, SpeechRecognizer
from models.audio.vad import RATE, StreamingVAD
from models.shared import shared
from pipelines.media.segment import Segment
from pipelines.stages.config import StageConfig


class SpeechStage:
    """VAD on every second; the audio of each finished speech span (cut at `max_span_s` when it runs long) as a
    piece for Whisper (`pieces`: audio and its start time; none when ASR is off).

    Each second's output carries the VAD's window probabilities (`window_probs`), which the audio stage takes
    as its speech-activity features instead of running Silero a second time on the same audio."""

    def __init__(self, config: StageConfig):
        self.config = config
        self.vad = StreamingVAD(threshold=config.vad_threshold)
        self._audio = np.zeros(0, np.float32)
        self._audio_t0 = 0.0
        self.vad_seconds = 0.0
        self._continued = False  # the open span was cut at max_span_s: its next piece carries on from there
        self._heard_until = 0.0  # where the last piece handed to Whisper ended

    def reset(self) -> None:
        """A new source: forget speech state and buffered audio."""
        self.vad.reset()
        self._audio = self._audio[:0]
        self._continued, self._heard_until = False, 0.0

    def _keep(self, seg: Segment) -> None:
        expected = self._audio_t0 + self._audio.size / RATE
        if self._audio.size == 0 or abs(seg.start - expected) > 0.05:
            self._audio, self._audio_t0 = seg.audio.copy(), seg.start
        else:
            self._audio = np.concatenate([self._audio, seg.audio])
        horizon = max(self.config.max_span_s + 5.0, 30.0)
        excess = self._audio.size - int(horizon * RATE)
        if excess > 0:
            self._audio = self._audio[excess:]
            self._audio_t0 += excess / RATE

    def _cut(self, start: float, end: float) -> np.ndarray:
        lo = max(0, int(round((start - self._audio_t0) * RATE)))
        hi = max(lo, int(round((end - self._audio_t0) * RATE)))
        return self._audio[lo:hi]

    def _piece(self, start: float, end: float, ended: bool = True) -> dict | None:
        """The audio Whisper should hear for [start, end). A span's first piece gets `asr_pre_roll_s` of audio
        before the VAD's start, and its last piece (`ended`) `asr_post_roll_s` after its end: the VAD fires after
        a soft first word has begun ("Please enter your password" came back as "enter your password"). The
        pieces of a long span meet exactly where one stopped, so no word is heard twice."""
        if not self.config.asr:
            return None
        if not self._continued:  # never back into what the previous span's piece already covered
            start = max(self._audio_t0, self._heard_until, start - self.config.asr_pre_roll_s)
        if ended:
            end += self.config.asr_post_roll_s
        self._continued, self._heard_until = not ended, end
        return {"audio": self._cut(start, end).copy(), "offset": max(start, self._audio_t0)}

    def process(self, seg: Segment) -> dict:
        out = {"index": seg.index, "speech_prob": 0.0, "spans": [], "pieces": [], "window_probs": [],
               "vad": seg.audio is not None, "open_since": None}
        if seg.audio is None:
            return out
        self._keep(seg)
        t0 = time.perf_counter()
        spans, probs = self.vad.feed(seg.audio, seg.start)
        self.vad_seconds += time.perf_counter() - t0
        out["window_probs"] = probs  # the audio stage's speech-activity features reuse them (one VAD, not two)
        out["speech_prob"] = round(max(probs), 3) if probs else 0.0
        for span in spans:
            out["spans"].append([round(span.start, 2), round(span.end, 2)])
            out["pieces"].append(self._piece(span.start, span.end))
        since = self.vad.open_since
        if since is not None and seg.end - since >= self.config.max_span_s:
            out["spans"].append([round(since, 2), round(seg.end, 2)])  # the events join it to the rest
            out["pieces"].append(self._piece(since, seg.end, ended=False))
            self.vad.split_open_span(seg.end)  # the rest of this long span is transcribed as a new piece
        out["pieces"] = [p for p in out["pieces"] if p is not None]
        out["open_since"] = self.vad.open_since  # a span in progress: the events hold the last one open
        return out

    def timings(self) -> dict[str, float]:
        """Seconds spent so far in the VAD."""
        return {"vad_s": self.vad_seconds}

    def finish(self) -> dict:
        out = {"index": None, "speech_prob": 0.0, "spans": [], "pieces": [], "vad": True, "open_since": None}
        span = self.vad.close()
        if span is not None:
            out["spans"].append([round(span.start, 2), round(span.end, 2)])
            out["pieces"] = [p for p in [self._piece(span.start, span.end)] if p is not None]
        return out


class TranscribeStage:
    """Whisper on the pieces the speech stage cut; hands on what the parser reads of speech (`index`,
    `speech_prob`, `spans`) with the `transcript`. Holds no state of a stream: the recognizer is shared."""

    def __init__(self, config: StageConfig, recognizer: SpeechRecognizer | None = None):
        self.config = config
        self.asr = recognizer if recognizer is not None or not config.asr else shared(
            ("faster-whisper", config.asr_model, config.asr_language),
            lambda: FasterWhisperRecognizer(config.asr_model, language=config.asr_language))  # stateless
        self.asr_seconds = 0.0

    def reset(self) -> None:
        """A new source: nothing of the last one is held."""

    def process(self, speech: dict) -> dict:
        transcript: list[dict] = []
        if self.asr is not None:
            for piece in speech["pieces"]:
                t0 = time.perf_counter()
                transcript += [s.to_dict() for s in self.asr.transcribe(piece["audio"], piece["offset"])]
                self.asr_seconds += time.perf_counter() - t0
        return {"index": speech["index"], "speech_prob": speech["speech_prob"], "spans": speech["spans"],
                "vad": speech.get("vad", False), "open_since": speech.get("open_since"), "transcript": transcript}

    finish = process  # the last span's piece, at the end of the stream

    def timings(self) -> dict[str, float]:
        """Seconds spent so far in Whisper."""
        return {"asr_s": self.asr_seconds}
