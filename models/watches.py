"""What a watch (a standing query) says besides its words: its own threshold, and whether it is about a sound.

A watch may end in `@ 0.6`: it then fires at that score instead of the stream's threshold, so one noisy watch
can be made stricter without silencing the others ("an alarm clock is ringing @0.8"). The same text works on
every surface (`--watch`, the API's `watches`, the dashboard's lines) and is kept as written.

A watch about a sound ("a telephone is ringing") must be answered by what was heard, not by words that name
it: "the phone is ringing", said aloud, is speech about a phone. So a sound watch fires only on a moment whose
modality weights give audio at least as much as speech and the picture. A watch about what someone says ("someone says the
phone is ringing") is a speech watch and is not held to that.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from models.errors import BadInput

THRESHOLD = re.compile(r"(?:^|\s)@\s*([0-9]*\.?[0-9]+)\s*$")
SOUND_WORDS = frozenset(
    "ring rings ringing rang bell bells chime chimes chiming bark barks barking barked siren sirens alarm alarms "
    "beep beeps beeping buzz buzzes buzzing buzzer sound sounds noise noises noisy bang bangs banging knock "
    "knocks knocking scream screams screaming shout shouts shouting yell yells yelling cry cries crying music "
    "song singing whistle whistles whistling horn horns honk honks honking explosion gunshot gunshots shot "
    "crash crashes shatter shatters shattering smash smashes thunder applause clapping laugh laughs laughing "
    "laughter cough coughs coughing sneeze meow meows purr howl howls growl growls roar roars engine rumble "
    "rumbles hum humming hiss hissing squeak squeaks squeal tick ticking clatter rattle rattles thud thump "
    "loud heard hear".split())
SPEECH_WORDS = frozenset(
    "say says said saying mention mentions mentioned mentioning talk talks talking talked speak speaks "
    "speaking spoke ask asks asking asked tell tells telling told word words call calls calling announce "
    "announces announcing whisper whispers".split())


@dataclass(frozen=True)
class WatchSpec:
    """One watch as written (`text`), its words for the grounder (`query`) and its own threshold, if any."""

    text: str
    query: str
    threshold: float | None
    sound: bool  # about a sound: needs audio evidence to fire


def parse_watch(text: str) -> WatchSpec:
    """`text` read as a watch; BadInput for a blank one or a threshold outside 0-1."""
    text = text.strip()
    threshold = None
    found = THRESHOLD.search(text)
    if found:
        threshold = float(found.group(1))
        if not 0.0 < threshold <= 1.0:
            raise BadInput(f"the threshold of watch {text!r} must be in (0, 1], got {found.group(1)}")
        query = text[: found.start()].strip()
    else:
        query = text
    if not query:
        raise BadInput("a watch must not be blank")
    return WatchSpec(text, query, threshold, is_sound_watch(query))


def is_sound_watch(query: str) -> bool:
    """The watch names a sound and says nothing about speaking: "a dog barks", not "someone says help"."""
    words = set(re.findall(r"[a-z]+", query.lower()))
    return bool(words & SOUND_WORDS) and not words & SPEECH_WORDS and '"' not in query


def heard(moment: dict) -> bool:
    """A moment whose modality weights show audio evidence: audio weighs at least as much as speech and as
    the picture (a sound is not found by words that name it, nor by a picture of what might make it)."""
    weights = moment.get("modality_weights") or {}
    audio = float(weights.get("audio", 0.0))
    return audio > 0.0 and audio >= float(weights.get("speech", 0.0)) and audio >= float(weights.get("visual", 0.0))
