"""The OpenTTD sound catalogue and SoundFont readers, on small containers written here (no package needed)."""

from __future__ import annotations

import io
import struct
import wave

import numpy as np
import pytest

from training.corpus.extra_sources import GAP_S, load_member
from training.corpus.real_sources import decode_bytes
from training.corpus.sound_archives import ArchiveError, CatArchive, SoundFont


def _wav(n: int, rate: int = 8000) -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes((np.sin(np.arange(n) / 5) * 8000).astype("<i2").tobytes())
    return buf.getvalue()


def _cat(entries: list[tuple[str, bytes]]) -> bytes:
    table, body, at = b"", b"", 8 * len(entries)
    for name, data in entries:
        raw = name.encode("latin-1") + b"\0"
        item = bytes([len(raw)]) + raw + data
        table += struct.pack("<II", at | 0x80000000, len(item))
        body += item
        at += len(item)
    return table + body


def _chunk(cid: bytes, data: bytes) -> bytes:
    return cid + struct.pack("<I", len(data)) + data


def _sf2() -> bytes:
    """One preset (bank 0, program 7) -> one instrument -> samples A (8 kHz), B (16 kHz) and R (a right channel)."""
    pcm = (np.arange(400) % 50 * 300).astype("<i2").tobytes()
    phdr = struct.pack("<20sHHHIII", b"Test", 7, 0, 0, 0, 0, 0) + struct.pack("<20sHHHIII", b"EOP", 0, 0, 1, 0, 0, 0)
    pbag = struct.pack("<HHHH", 0, 0, 1, 0)
    pgen = struct.pack("<HHHH", 41, 0, 0, 0)
    inst = struct.pack("<20sH", b"Inst", 0) + struct.pack("<20sH", b"EOI", 3)
    ibag = b"".join(struct.pack("<HH", g, 0) for g in range(4))
    igen = struct.pack("<HHHHHHHH", 53, 0, 53, 1, 53, 2, 0, 0)
    shdr = b"".join(struct.pack("<20sIIIIIBbHH", n, a, b, a, b, r, 60, 0, 0, kind)
                    for n, a, b, r, kind in ((b"A", 0, 100, 8000, 1), (b"B", 100, 300, 16000, 1),
                                             (b"R", 300, 400, 16000, 2), (b"EOS", 0, 0, 0, 0)))
    pdta = b"pdta" + b"".join(_chunk(c, d) for c, d in ((b"phdr", phdr), (b"pbag", pbag), (b"pmod", b""),
                                                         (b"pgen", pgen), (b"inst", inst), (b"ibag", ibag),
                                                         (b"imod", b""), (b"igen", igen), (b"shdr", shdr)))
    body = (b"sfbk" + _chunk(b"LIST", b"INFO" + _chunk(b"ifil", struct.pack("<HH", 2, 1)))
            + _chunk(b"LIST", b"sdta" + _chunk(b"smpl", pcm)) + _chunk(b"LIST", pdta))
    return _chunk(b"RIFF", body)


def test_cat_titles_credits_and_wave_data(tmp_path):
    path = tmp_path / "x.cat"
    path.write_bytes(_cat([('"One". By A. License: CC0.', _wav(800)), ('"Lumber mill: Two". By B.', _wav(1600))]))
    cat = CatArchive(path)
    assert cat.titles() == ["One", "Lumber mill: Two"]
    assert "License: CC0" in cat.credit(0)
    assert cat.read(1)[:4] == b"RIFF"
    assert decode_bytes(cat.read(1), ".wav", 16_000).size == 3200  # 0.2 s at 8 kHz -> 16 kHz


def test_soundfont_preset_samples_and_rendering(tmp_path):
    path = tmp_path / "x.sf2"
    path.write_bytes(_sf2())
    name, samples = SoundFont(path).presets()[(0, 7)]
    assert name == "Test" and [s.name for s in samples] == ["A", "B"]  # the right channel is left out
    wave16 = load_member(f"sf:{path}:0/7", 16_000)
    gap = int(GAP_S * 16_000)
    assert wave16.size == 200 + gap + 200 + gap  # A resampled 8 -> 16 kHz, B as is, silence after each
    assert np.abs(wave16[200:200 + gap]).max() == 0


def test_readers_refuse_other_files(tmp_path):
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"RIFF\0\0\0\0WAVEfmt ")
    with pytest.raises(ArchiveError):
        SoundFont(bad)
    with pytest.raises(ArchiveError):
        CatArchive(bad)
