"""The real recordings and photos that installed packages carry, with LLP labels from their file and folder names.

Corpus v3 is composed only from these. Each `Recording` is one source file; the split hygiene rule (no file
feeds two splits) is enforced on `Recording.key`. Labels come from names (the package author's metadata);
`training.corpus.label_check` then scores every file with YAMNet and drops or flags files whose AudioSet
scores disagree. Only the source folders below are ever read (`_check_allowed`): the packages reserved for
acceptance (docs/corpus.md names them) lie outside every one of them.

Sources (licences: `docs/corpus.md`):
- `gcompris-qt-data`: Qt resource bundles `/usr/share/gcompris-qt/rcc/*.rcc` (read with `rcc.RccArchive`);
- `tuxpaint-stamps-default`: `/usr/share/tuxpaint/stamps/**` sounds (`<stamp>.ogg`: the thing itself;
  `<stamp>_desc[_<lang>].ogg`: a recorded human voice describing it, hence Speech) and photos (`.png`);
- `sound-theme-freedesktop`: `/usr/share/sounds/freedesktop/stereo/*.oga`;
- scikit-image's sample photos (`chelsea` the cat, `motorcycle_left/right`);
- game sound sets and a SoundFont (`openttd-opensfx`, `fluidr3mono-gm-soundfont`, `tuxtype-data`, `tuxfootball`,
  `heroes-sound-effects`): inventoried in `training.corpus.extra_sources`, read through the guard below.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from training.corpus.extra_sources import EXTRA_ROOTS, extra_recordings, load_member
from training.corpus.recording import Recording, decode_bytes

GCOMPRIS_RCC = Path("/usr/share/gcompris-qt/rcc")
TUXPAINT_STAMPS = Path("/usr/share/tuxpaint/stamps")
FREEDESKTOP = Path("/usr/share/sounds/freedesktop/stereo")
ALLOWED_ROOTS = (GCOMPRIS_RCC, TUXPAINT_STAMPS, FREEDESKTOP, *EXTRA_ROOTS)  # plus scikit-image's photos by name
CONTAINERS = ("rcc:", "cat:", "sf:")  # "<kind>:<container file>:<member>" locators
ROLES = ("event", "background", "distractor")
MIN_PHOTO_SIDE = 200


@dataclass(frozen=True)
class Photo:
    """One source photo; `llp` is the visual class it shows (None for a non-target picture)."""

    key: str
    source: str
    locator: str
    llp: str | None


# (bundle, file name regex, LLP class or None, role). Non-target instruments and animals are distractors: real
# sounds a model must learn not to call by a target name; long ambiences are backgrounds.
GCOMPRIS_SOUNDS: tuple[tuple[str, str, str | None, str], ...] = (
    ("instruments", r"^accordion\.ogg$", "Accordion", "event"),
    ("instruments", r"^banjo\.ogg$", "Banjo", "event"),
    ("instruments", r"^violin\.ogg$", "Violin_fiddle", "event"),
    ("instruments", r"^cello\.ogg$", "Cello", "event"),
    ("instruments", r"^guitar\.ogg$", "Acoustic_guitar", "event"),
    ("instruments", r"^(flute_traversiere|castanets|drum_kit|organ|trombone|tuba|clarinet|maracas|saxophone|timpani"
                    r"|harp|cymbal|piano|horn|trumpet|triangle|electric_guitar|bongo|harmonica|snare_drum"
                    r"|tambourine)\.ogg$", None, "distractor"),
    ("explore_farm_animals", r"^dog\.ogg$", "Dog", "event"),
    ("explore_farm_animals", r"^cat\.ogg$", "Cat", "event"),
    ("explore_farm_animals", r"^chickens\.ogg$", "Chicken_rooster", "event"),
    ("explore_farm_animals", r"^(sheep|duck|cow|horse|pig|owl)\.ogg$", None, "distractor"),
    ("memory-sound", r"^LRApplauses_.*\.ogg$", "Clapping", "event"),
    ("memory-sound", r"^LRBark_.*\.ogg$", "Dog", "event"),
    ("memory-sound", r"^guitar_(son\d|melody)\.ogg$", "Acoustic_guitar", "event"),
    ("memory-sound", r"^LRStartAndStopCarEngine.*\.ogg$", "Car", "event"),
    ("memory-sound", r"^LRRing_.*\.ogg$", "Telephone_bell_ringing", "event"),
    ("memory-sound", r"^LR(Rain_in_garden|FrogsInPond|Factory_noise|Train_slowing).*\.ogg$", None, "background"),
    ("memory-sound", r"^LR(Heart_beat|Door_Open|Hits|Buddhist_gong|Object_falling|Fireballs).*\.ogg$", None,
     "distractor"),
    ("guessnumber", r"^helicopter\.wav$", "Helicopter", "event"),
    ("traffic", r"^car\.wav$", "Car", "event"),
    ("railroad", r"^train\.wav$", None, "background"),
    ("watercycle", r"^harbor\d\.wav$", None, "background"),
    ("canal_lock", r"^water_fill\.wav$", None, "background"),
)

# tuxpaint stamp sound stems (the stamp's own sound, not the voice) -> LLP class; listed stems only.
TUXPAINT_SOUNDS: dict[str, str | None] = {
    "dog": "Dog", "blackcat": "Cat", "rooster": "Chicken_rooster", "hen": "Chicken_rooster",
    "cello": "Cello", "violin": "Violin_fiddle", "vacuum_cleaner": "Vacuum_cleaner",
    **{stem: None for stem in ("Washing-machine", "kettle", "drumkit", "fireworks", "cow", "horse", "sheep", "pig",
                               "duck", "goat", "owl", "lion", "elephant", "frog", "bee", "hammer", "saw", "toilet",
                               "glass", "bottle", "cymbal_crash", "bassoon", "firetruck", "seagull", "crow",
                               "cuckoo", "donkey", "turkey", "whale", "mosquito")},
}
TUXPAINT_BACKGROUND = ("lightningbolt",)

# Photos: (bundle, resource file name, LLP class); tuxpaint `.png` stems; scikit-image names.
GCOMPRIS_PHOTOS: tuple[tuple[str, str, str | None], ...] = (
    ("explore_farm_animals", "dog.webp", "Dog"), ("explore_farm_animals", "cat.webp", "Cat"),
    ("explore_farm_animals", "chicken.webp", "Chicken_rooster"),
    ("lang", "dog.webp", "Dog"), ("lang", "cat.webp", "Cat"), ("lang", "chicken.webp", "Chicken_rooster"),
)
TUXPAINT_PHOTOS: dict[str, str | None] = {
    "dog": "Dog", "blackcat": "Cat", "rooster": "Chicken_rooster", "hen": "Chicken_rooster", "cello": "Cello",
    "violin": "Violin_fiddle", "vacuum_cleaner": "Vacuum_cleaner",
    **{stem: None for stem in ("cow", "horse", "sheep", "pig", "duck", "goat", "lion", "elephant", "kettle",
                               "Washing-machine", "drumkit", "bassoon", "giraffe", "zebra", "penguin")},
}
SKIMAGE_PHOTOS: dict[str, str | None] = {"chelsea": "Cat", "motorcycle_left": "Motorcycle",
                                         "motorcycle_right": "Motorcycle", "coffee": None, "rocket": None,
                                         "astronaut": None, "brick": None}


def _check_allowed(locator: str) -> None:
    """Refuse anything outside the listed sources, so no other package can reach a training corpus."""
    if locator.startswith("skimage:"):
        return
    path = Path(locator.split(":", 2)[1] if locator.startswith(CONTAINERS) else locator).resolve()
    if not any(path.is_relative_to(root) for root in ALLOWED_ROOTS):
        raise ValueError(f"{locator} is not one of corpus v3's sources and must never be read for training")


@cache
def _bundle(name: str):  # noqa: ANN202 - RccArchive, imported lazily with the bundle
    from training.corpus.rcc import RccArchive

    return RccArchive(GCOMPRIS_RCC / f"{name}.rcc")


def gcompris_recordings() -> list[Recording]:
    out = []
    for bundle, pattern, llp, role in GCOMPRIS_SOUNDS:
        path = GCOMPRIS_RCC / f"{bundle}.rcc"
        if not path.is_file():
            continue
        rx = re.compile(pattern)
        for res in sorted(_bundle(bundle).files()):
            name = res.rsplit("/", 1)[-1]
            if rx.search(name) and "/voices" not in res:
                out.append(Recording(f"gcompris:{bundle}/{name}", "gcompris-qt-data", f"rcc:{path}:{res}", llp, role))
    return out


def tuxpaint_recordings(max_voices: int = 160) -> list[Recording]:
    """Stamp sounds by stem, plus up to `max_voices` recorded descriptions (Speech; every language, chosen by a
    hash of the path so the choice is stable), English ones (`*_desc.ogg`) excluded: they are the ASR set."""
    if not TUXPAINT_STAMPS.is_dir():
        return []
    out, voices = [], []
    for p in sorted(TUXPAINT_STAMPS.rglob("*.ogg")):
        stem = p.stem
        key = f"tuxpaint:{p.relative_to(TUXPAINT_STAMPS)}"
        if "_desc_" in stem:
            voices.append(Recording(key, "tuxpaint-stamps-default", str(p), "Speech", "event"))
        elif stem in TUXPAINT_SOUNDS:
            llp = TUXPAINT_SOUNDS[stem]
            out.append(Recording(key, "tuxpaint-stamps-default", str(p), llp, "event" if llp else "distractor"))
        elif stem in TUXPAINT_BACKGROUND:
            out.append(Recording(key, "tuxpaint-stamps-default", str(p), None, "background"))
    voices.sort(key=lambda r: hashlib.sha1(r.key.encode()).hexdigest())
    return out + voices[:max_voices]


def freedesktop_recordings() -> list[Recording]:
    names = {"phone-incoming-call": "Telephone_bell_ringing", "phone-outgoing-calling": "Telephone_bell_ringing",
             "alarm-clock-elapsed": "Fire_alarm", "bell": None, "complete": None, "message-new-instant": None,
             "camera-shutter": None, "dialog-warning": None, "service-login": None, "trash-empty": None}
    out = []
    for name, llp in names.items():
        p = FREEDESKTOP / f"{name}.oga"
        if p.is_file():
            out.append(Recording(f"freedesktop:{name}", "sound-theme-freedesktop", str(p), llp,
                                 "event" if llp else "distractor"))
    return out


def all_recordings(max_voices: int = 160, extra: bool = True) -> list[Recording]:
    """Every inventoried recording; `extra=False` leaves out the second source round (`extra_sources`), which is
    corpus v3's inventory: v3's source-level split, and the figures of the models trained on it, stay as built."""
    recs = gcompris_recordings() + tuxpaint_recordings(max_voices) + freedesktop_recordings()
    recs += extra_recordings() if extra else []
    for r in recs:
        _check_allowed(r.locator)
    keys = [r.key for r in recs]
    if len(set(keys)) != len(keys):
        raise ValueError("two recordings share a key")
    return recs


def all_photos() -> list[Photo]:
    out = []
    for bundle, name, llp in GCOMPRIS_PHOTOS:
        path = GCOMPRIS_RCC / f"{bundle}.rcc"
        if not path.is_file():
            continue
        hits = [res for res in sorted(_bundle(bundle).files()) if res.rsplit("/", 1)[-1] == name]
        if hits:
            out.append(Photo(f"gcompris:{bundle}/{name}", "gcompris-qt-data", f"rcc:{path}:{hits[0]}", llp))
    for p in sorted(TUXPAINT_STAMPS.rglob("*.png")) if TUXPAINT_STAMPS.is_dir() else []:
        if p.stem in TUXPAINT_PHOTOS and min(_png_size(p)) >= MIN_PHOTO_SIDE:  # skip icon-sized stamps
            out.append(Photo(f"tuxpaint:{p.relative_to(TUXPAINT_STAMPS)}", "tuxpaint-stamps-default", str(p),
                             TUXPAINT_PHOTOS[p.stem]))
    for name, llp in SKIMAGE_PHOTOS.items():
        out.append(Photo(f"skimage:{name}", "scikit-image", f"skimage:{name}", llp))
    return out


def _png_size(path: Path) -> tuple[int, int]:
    from PIL import Image

    with Image.open(path) as img:
        return img.size


def _bytes(locator: str) -> bytes:
    _, bundle, res = locator.split(":", 2)
    return _bundle(Path(bundle).stem).read(res)


@cache
def load_recording(locator: str, rate: int = 16_000) -> np.ndarray:
    """Float32 mono samples at `rate` of a recording (decoded from its bundle when it lives in one)."""
    from training.media.synth import load_audio

    _check_allowed(locator)
    if locator.startswith(("cat:", "sf:")):
        return load_member(locator, rate)
    if not locator.startswith("rcc:"):
        return load_audio(locator, rate)
    return decode_bytes(_bytes(locator), Path(locator).suffix, rate)


@cache
def load_photo(locator: str) -> np.ndarray:
    """RGB uint8 photo; transparent pixels (tuxpaint stamps) are put on a mid-grey backdrop."""
    import io

    from PIL import Image

    _check_allowed(locator)
    if locator.startswith("skimage:"):
        from training.media.synth import sample_image

        return sample_image(locator.split(":", 1)[1])
    data = _bytes(locator) if locator.startswith("rcc:") else Path(locator).read_bytes()
    img = Image.open(io.BytesIO(data)).convert("RGBA")
    rgba = np.asarray(img, np.float32) / 255.0
    alpha = rgba[..., 3:4]
    rgb = rgba[..., :3] * alpha + 0.5 * (1 - alpha)
    return (rgb * 255).astype(np.uint8)


def english_descriptions() -> list[tuple[Path, str]]:
    """(recording, reference text) of the English stamp descriptions (`<stem>_desc.ogg` with `<stem>.txt`'s first
    line): real recorded English speech with a transcript, for the ASR table."""
    out = []
    for p in sorted(TUXPAINT_STAMPS.rglob("*_desc.ogg")) if TUXPAINT_STAMPS.is_dir() else []:
        txt = p.with_name(p.name[: -len("_desc.ogg")] + ".txt")
        if txt.is_file():
            first = txt.read_text(errors="replace").splitlines()
            if first and first[0].strip():
                out.append((p, first[0].strip()))
    return out
