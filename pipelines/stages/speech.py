"""Speech: voice activity on every second (`SpeechStage`), Whisper on each finished speech span (`TranscribeStage`).

They are two nodes of the stage graph so that the VAD of the next seconds, and the audio stage that takes its
window probabilities, go on while Whisper transcribes a span: on the speech + tags path the two in one node were
the critical path. The speech stage cuts each piece of audio Whisper should hear (with its pre- and post-roll)
and hands it on; the transcribe stage runs Whisper on it. Transcripts are those of one node doing both.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from models.audio.asr import FasterWhisperRecognizer, SpeechRecognizer
from models.audio.vad import RATE, StreamingVAD
from models.errors import BadInput
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
    `speech_prob`, `spans`) with the `transcript`. The recognizer is shared.

    With `config.asr_background` (a live source: `graph.node_config` sets it) a second does not wait for Whisper:
    each piece goes to the process's one Whisper thread, and its lines come out, in order, with the first second
    after they are done; `finish` waits for the rest. The lines are the same; only the second that carries them
    moves. Four cameras whose utterances end in the same second otherwise held each other's seconds back for the
    length of four transcriptions (docs/performance.md, "Four streams without a budget")."""

    def __init__(self, config: StageConfig, recognizer: SpeechRecognizer | None = None):
        self.config = config
        self.asr = recognizer
        if recognizer is None and config.asr:  # in the background, built on the Whisper thread: its CTranslate2
            # worker inherits the thread's lower priority (`whisper_thread`; a bad FORESIGHT_WHISPER_NICE stops here)
            if config.asr_background:
                background_nice()
            self.asr = (whisper_thread().submit(shared_recognizer, config).result() if config.asr_background
                        else shared_recognizer(config))
        self.asr_seconds = 0.0
        self._pending: deque[Future] = deque()  # background pieces not handed on yet, in order

    def reset(self) -> None:
        """A new source: nothing of the last one is held (its pieces still in Whisper are dropped)."""
        self._pending.clear()

    def process(self, speech: dict) -> dict:
        pieces = speech["pieces"] if self.asr is not None else []
        if self.config.asr_background:
            self._pending.extend(whisper_thread().submit(self._transcribe, piece) for piece in pieces)
            transcript = self._done(wait=False)
        else:
            transcript = [line for piece in pieces for line in self._counted(self._transcribe(piece))]
        return {"index": speech["index"], "speech_prob": speech["speech_prob"], "spans": speech["spans"],
                "vad": speech.get("vad", False), "open_since": speech.get("open_since"), "transcript": transcript}

    def finish(self, speech: dict) -> dict:
        """The last span's piece, at the end of the stream, and every line still in Whisper."""
        out = self.process(speech)
        out["transcript"] += self._done(wait=True)
        return out

    def _transcribe(self, piece: dict) -> tuple[list[dict], float]:
        t0 = time.perf_counter()
        lines = [s.to_dict() for s in self.asr.transcribe(piece["audio"], piece["offset"])]
        return lines, time.perf_counter() - t0

    def _counted(self, done: tuple[list[dict], float]) -> list[dict]:
        lines, seconds = done
        self.asr_seconds += seconds
        return lines

    def _done(self, wait: bool) -> list[dict]:
        """The lines of the background pieces that are done (all of them with `wait`), oldest first; a piece
        behind one still running waits its turn, so lines keep their order."""
        out: list[dict] = []
        while self._pending and (wait or self._pending[0].done()):
            out += self._counted(self._pending.popleft().result())
        return out

    def timings(self) -> dict[str, float]:
        """Seconds spent so far in Whisper."""
        return {"asr_s": self.asr_seconds}


def shared_recognizer(config: StageConfig) -> FasterWhisperRecognizer:
    """The process's Whisper for `config` (stateless, so every stream's stage shares it); the background one apart."""
    return shared(("faster-whisper", config.asr_model, config.asr_language, config.asr_background),
                  lambda: FasterWhisperRecognizer(config.asr_model, language=config.asr_language))


NICE_ENV = "FORESIGHT_WHISPER_NICE"  # how much lower the background Whisper's priority is (0 to 19; default 10)
BACKGROUND_NICE = 10  # against the seconds' stages, a busy Whisper then gets about a tenth of a shared core


def whisper_thread() -> ThreadPoolExecutor:
    """The process's one thread for background transcription: Whisper runs one piece at a time, whatever the
    number of streams, as the transcribe node's turns do (`hosts.py`).

    It runs at a lower priority (`BACKGROUND_NICE`, or FORESIGHT_WHISPER_NICE; Linux only, where a thread has its
    own): the seconds' stages get the CPU first and Whisper the rest, so four cameras whose utterances end
    together no longer have every stream's seconds queue behind several seconds of Whisper, as long as the machine
    has CPU to spare (docs/performance.md, session 30)."""
    return shared(("whisper-thread",), lambda: ThreadPoolExecutor(1, thread_name_prefix="whisper",
                                                                  initializer=lower_priority))


def background_nice() -> int:
    """How much lower background Whisper runs: FORESIGHT_WHISPER_NICE (0: as the stages), else `BACKGROUND_NICE`."""
    raw = os.environ.get(NICE_ENV, "").strip()
    if not raw:
        return BACKGROUND_NICE
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if not 0 <= value <= 19:
        raise BadInput(f"{NICE_ENV} must be a whole number from 0 to 19, not {raw!r}")
    return value


def lower_priority() -> None:
    """Lower the calling thread's CPU priority by `background_nice()` (threads it starts later inherit it). Linux
    only: there `setpriority` on a thread id concerns that thread alone (elsewhere it would slow the process)."""
    nice = background_nice()
    if nice == 0 or not sys.platform.startswith("linux"):
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + nice))
    except OSError:  # a sandbox that forbids it: the thread keeps its priority
        pass
