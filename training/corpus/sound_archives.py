"""Read sounds out of two container formats that Debian packages ship recordings in, without the programs that
normally read them.

* OpenTTD's sound catalogue (`.cat`, the form of `openttd-opensfx`): a table of (offset, size) pairs, little
  endian, whose first offset divided by 8 is the number of entries (OpenTTD sets the top bit of each offset, which
  is masked off); each entry is a length-prefixed, NUL-terminated title ("Helicopter". Original ... License: ...)
  followed by a complete RIFF WAVE file.
* SoundFont 2 banks (`.sf2`, and MuseScore's `.sf3`, whose samples are Ogg Vorbis streams): a RIFF `sfbk` file
  whose `pdta` list links presets (`phdr`/`pbag`/`pgen`, generator 41 = instrument) to instruments
  (`inst`/`ibag`/`igen`, generator 53 = sample) to sample headers (`shdr`); `sdta/smpl` holds the sample data
  (16-bit PCM addressed in sample points for sf2, byte ranges of Ogg streams for sf3).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SF_INSTRUMENT, SF_SAMPLE_ID = 41, 53
SF_RIGHT, SF_ROM, SF_OGG = 0x2, 0x8000, 0x10


class ArchiveError(ValueError):
    """The file is not a container this reader understands."""


class CatArchive:
    """The entries of an OpenTTD sound catalogue: `titles()` by index, `read(index)` the entry's WAVE bytes."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.blob = self.path.read_bytes()
        first = struct.unpack_from("<I", self.blob, 0)[0] & 0x7FFFFFFF
        if first % 8 or not 8 <= first <= len(self.blob):
            raise ArchiveError(f"{self.path} is not an OpenTTD sound catalogue")
        self.entries: list[tuple[str, int, int]] = []  # (title, start of the WAVE data, end)
        for i in range(first // 8):
            offset, size = struct.unpack_from("<II", self.blob, 8 * i)
            offset &= 0x7FFFFFFF
            n = self.blob[offset]
            name = self.blob[offset + 1: offset + 1 + n].split(b"\0")[0].decode("latin-1")
            self.entries.append((name, offset + 1 + n, offset + size))

    def titles(self) -> list[str]:
        """Each entry's short title: the quoted part of its name ("Helicopter", "Lumber mill: Chainsaw")."""
        out = []
        for name, _, _ in self.entries:
            m = re.match(r'"([^"]*)"', name)
            out.append(m.group(1) if m else name)
        return out

    def credit(self, index: int) -> str:
        """The entry's full name: title, original file and author, licence."""
        return self.entries[index][0]

    def read(self, index: int) -> bytes:
        _, a, b = self.entries[index]
        data = self.blob[a:b]
        if data[:4] != b"RIFF":
            raise ArchiveError(f"{self.path} entry {index} holds no WAVE data")
        return data


@dataclass(frozen=True)
class SfSample:
    name: str
    start: int
    end: int
    rate: int
    pitch: int
    kind: int


def _chunks(blob: bytes, at: int, end: int):  # noqa: ANN202 - iterator of (id, data offset, size)
    while at + 8 <= end:
        cid, size = blob[at:at + 4], struct.unpack_from("<I", blob, at + 4)[0]
        yield cid, at + 8, size
        at += 8 + size  # sf3 writers do not pad odd chunks, and sf2 chunk sizes are even


class SoundFont:
    """Presets of a SoundFont bank and the recorded samples each plays."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.blob = self.path.read_bytes()
        if self.blob[:4] != b"RIFF" or self.blob[8:12] != b"sfbk":
            raise ArchiveError(f"{self.path} is not a SoundFont")
        self.chunks: dict[str, tuple[int, int]] = {}
        for cid, at, size in _chunks(self.blob, 12, len(self.blob)):
            if cid == b"LIST":
                for sub, sub_at, sub_size in _chunks(self.blob, at + 4, at + size):
                    self.chunks[sub.decode("latin-1")] = (sub_at, sub_size)
        missing = {"smpl", "phdr", "pbag", "pgen", "inst", "ibag", "igen", "shdr"} - set(self.chunks)
        if missing:
            raise ArchiveError(f"{self.path}: SoundFont without {sorted(missing)}")

    def _records(self, chunk: str, fmt: str) -> list[tuple]:
        at, size = self.chunks[chunk]
        n = struct.calcsize(fmt)
        return [struct.unpack_from(fmt, self.blob, at + i * n) for i in range(size // n)]

    def presets(self) -> dict[tuple[int, int], tuple[str, list[SfSample]]]:
        """(bank, program) -> (preset name, its distinct samples in sample-header order; right channels of
        stereo pairs and ROM samples left out)."""
        phdr, pbag, pgen = (self._records("phdr", "<20sHHHIII"), self._records("pbag", "<HH"),
                            self._records("pgen", "<HH"))
        inst, ibag, igen = self._records("inst", "<20sH"), self._records("ibag", "<HH"), self._records("igen", "<HH")
        shdr = self._records("shdr", "<20sIIIIIBbHH")
        out = {}
        for i, (name, program, bank, bag, *_) in enumerate(phdr[:-1]):
            instruments = {pgen[g][1] for b in range(bag, phdr[i + 1][3])
                           for g in range(pbag[b][0], pbag[b + 1][0]) if pgen[g][0] == SF_INSTRUMENT}
            ids = {igen[g][1] for k in instruments if k + 1 < len(inst) for b in range(inst[k][1], inst[k + 1][1])
                   for g in range(ibag[b][0], ibag[b + 1][0]) if igen[g][0] == SF_SAMPLE_ID}
            samples = [SfSample(shdr[s][0].split(b"\0")[0].decode("latin-1"), shdr[s][1], shdr[s][2], shdr[s][5],
                                shdr[s][6], shdr[s][9]) for s in sorted(ids)]
            samples = [s for s in samples if not s.kind & (SF_RIGHT | SF_ROM)]
            out[(bank, program)] = (name.split(b"\0")[0].decode("latin-1"), samples)
        return out

    def sample_bytes(self, sample: SfSample) -> bytes:
        """An sf3 sample's Ogg stream, or an sf2 sample's 16-bit little-endian PCM."""
        at = self.chunks["smpl"][0]
        if sample.kind & SF_OGG:
            return self.blob[at + sample.start: at + sample.end]
        return self.blob[at + 2 * sample.start: at + 2 * sample.end]

    def is_ogg(self, sample: SfSample) -> bool:
        return bool(sample.kind & SF_OGG)


def pcm16_to_rate(data: bytes, rate_in: int, rate: int) -> np.ndarray:
    """Float32 samples of 16-bit PCM at `rate_in`, linearly resampled to `rate`."""
    x = np.frombuffer(data, "<i2").astype(np.float32) / 32768.0
    if rate_in == rate or x.size < 2:
        return x
    t = np.arange(int(x.size * rate / rate_in)) * (rate_in / rate)
    return np.interp(t, np.arange(x.size), x).astype(np.float32)
