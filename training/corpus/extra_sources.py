"""Corpus v4 recordings from game sound sets and a SoundFont (issue 11's second source round), with LLP labels
from their titles and file names, like `real_sources` (which holds the guard every path passes, and loads them;
it reads this module, never the other way round).

- `openttd-opensfx`: `opensfx.cat`, one entry per game sound, titled ("Helicopter", "Lumber mill: Chainsaw",
  "Applause"); each title names its original recording, author and licence (`sound_archives.CatArchive.credit`).
- `fluidr3mono-gm-soundfont`: General MIDI presets of recorded instrument samples (Frank Wen's Fluid R3, "largely
  from recordings of my own" per its copyright file). One preset is one source recording: its samples (one note
  each, from one instrument) are played one after another, `GAP_S` apart, and never split between splits.
- `tuxtype-data`, `tuxfootball`, `heroes-sound-effects`: plain `.wav` files named after what they hold
  (`cheer`, `crowdcheer`, `alarm`; heroes' `foule` is French for crowd).
Labels are only those the titles and names say; YAMNet's check (`label_check`) then keeps or drops each file.
Several OpenSFX entries are cut from the same original (e.g. both winds, both crashes): only one of each is listed.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import numpy as np

from training.corpus.recording import Recording, decode_bytes
from training.corpus.sound_archives import CatArchive, SoundFont, pcm16_to_rate

OPENSFX_CAT = Path("/usr/share/games/openttd/baseset/opensfx/opensfx.cat")
FLUIDR3_SF3 = Path("/usr/share/fluidr3mono-gm-soundfont/FluidR3Mono_GM.sf3")  # the real file, not the sf3/ link
TUXTYPE_SOUNDS = Path("/usr/share/tuxtype/sounds")
TUXFOOTBALL_SOUNDS = Path("/usr/share/games/tuxfootball/sound")
HEROES_SFX = Path("/usr/share/games/heroes/sfx")
EXTRA_ROOTS = (OPENSFX_CAT.parent, FLUIDR3_SF3.parent, TUXTYPE_SOUNDS, TUXFOOTBALL_SOUNDS, HEROES_SFX)

GAP_S = 0.25
MAX_PRESET_S = 30.0

# OpenSFX title (exact) -> (LLP class or None, role).
OPENSFX_SOUNDS: dict[str, tuple[str | None, str]] = {
    "Helicopter": ("Helicopter", "event"),
    "Lumber mill: Chainsaw": ("Chainsaw", "event"),
    "Applause": ("Clapping", "event"),
    "Wind": (None, "background"),
    **{title: (None, "distractor") for title in (
        "Factory Whistle", "Ship horn", "Propeller plane start", "Diesel/electric train station departure",
        "Level crossing", "Cash till", "Explosion", "Jackhammer", "Sheep", "Cow", "Horse", "Sawmill",
        "Tropical: Lion roar", "Tropical: Bird (1)")},
}

# Fluid R3 Mono General MIDI program (bank 0) -> LLP class or None (a distractor instrument).
FLUIDR3_PRESETS: dict[int, str | None] = {
    21: "Accordion", 105: "Banjo", 40: "Violin_fiddle", 42: "Cello", 24: "Acoustic_guitar", 25: "Acoustic_guitar",
    124: "Telephone_bell_ringing", 125: "Helicopter", 126: "Clapping",
    0: None, 12: None, 46: None, 56: None, 71: None, 73: None,  # piano, marimba, harp, trumpet, clarinet, flute
}

# (folder, file name, LLP class or None, role)
NAMED_FILES: tuple[tuple[Path, str, str | None, str], ...] = (
    (TUXTYPE_SOUNDS, "cheer.wav", "Cheering", "event"),
    (TUXTYPE_SOUNDS, "alarm.wav", "Fire_alarm", "event"),
    (TUXTYPE_SOUNDS, "explosion.wav", None, "distractor"),
    (TUXTYPE_SOUNDS, "harp.wav", None, "distractor"),
    (TUXFOOTBALL_SOUNDS, "crowdcheer.wav", "Cheering", "event"),
    (TUXFOOTBALL_SOUNDS, "refwhistlelong.wav", None, "distractor"),
    (TUXFOOTBALL_SOUNDS, "kick.wav", None, "distractor"),
    (HEROES_SFX, "foule1.wav", "Cheering", "event"),
    (HEROES_SFX, "foule2.wav", "Cheering", "event"),
    (HEROES_SFX, "clock02.wav", None, "distractor"),
)
_PACKAGE = {TUXTYPE_SOUNDS: "tuxtype-data", TUXFOOTBALL_SOUNDS: "tuxfootball", HEROES_SFX: "heroes-sound-effects"}
_KEY = {TUXTYPE_SOUNDS: "tuxtype", TUXFOOTBALL_SOUNDS: "tuxfootball", HEROES_SFX: "heroes"}


@cache
def _cat(path: str) -> CatArchive:
    return CatArchive(path)


@cache
def _soundfont(path: str) -> SoundFont:
    return SoundFont(path)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")


def opensfx_recordings() -> list[Recording]:
    if not OPENSFX_CAT.is_file():
        return []
    out = []
    for i, title in enumerate(_cat(str(OPENSFX_CAT)).titles()):
        if title in OPENSFX_SOUNDS:
            llp, role = OPENSFX_SOUNDS[title]
            out.append(Recording(f"opensfx:{i:02d}_{_slug(title)}", "openttd-opensfx", f"cat:{OPENSFX_CAT}:{i}",
                                 llp, role))
    return out


def fluidr3_recordings() -> list[Recording]:
    if not FLUIDR3_SF3.is_file():
        return []
    presets = _soundfont(str(FLUIDR3_SF3)).presets()
    out = []
    for program, llp in FLUIDR3_PRESETS.items():
        if (0, program) in presets:
            name = presets[(0, program)][0]
            out.append(Recording(f"fluidr3:{program:03d}_{_slug(name)}", "fluidr3mono-gm-soundfont",
                                 f"sf:{FLUIDR3_SF3}:0/{program}", llp, "event" if llp else "distractor"))
    return out


def named_file_recordings() -> list[Recording]:
    out = []
    for folder, name, llp, role in NAMED_FILES:
        path = folder / name
        if path.is_file():
            out.append(Recording(f"{_KEY[folder]}:{name}", _PACKAGE[folder], str(path), llp, role))
    return out


def extra_recordings() -> list[Recording]:
    return opensfx_recordings() + fluidr3_recordings() + named_file_recordings()


def load_member(locator: str, rate: int = 16_000) -> np.ndarray:
    """Float32 mono samples of a "cat:<catalogue>:<index>" entry or an "sf:<bank file>:<bank>/<program>" preset
    (its samples in order, `GAP_S` of silence after each, at most `MAX_PRESET_S` seconds in all). The caller
    (`real_sources.load_recording`) has already checked the path."""
    kind, path, member = locator.split(":", 2)
    if kind == "cat":
        return decode_bytes(_cat(path).read(int(member)), ".wav", rate)
    font = _soundfont(path)
    bank, program = (int(x) for x in member.split("/"))
    gap = np.zeros(int(GAP_S * rate), np.float32)
    parts: list[np.ndarray] = []
    for sample in font.presets()[(bank, program)][1]:
        data = font.sample_bytes(sample)
        wave = decode_bytes(data, ".ogg", rate) if font.is_ogg(sample) else pcm16_to_rate(data, sample.rate, rate)
        parts += [wave, gap]
        if sum(p.size for p in parts) >= MAX_PRESET_S * rate:
            break
    return np.concatenate(parts)[: int(MAX_PRESET_S * rate)] if parts else np.zeros(0, np.float32)
