"""What the corpus is made of: package-carried pictures, sounds and espeak-ng sentences, their LLP classes,
and the query wordings, each bank split into a training part and a held-out part.

Media (nothing is downloaded; everything comes from installed packages):
- pictures: scikit-image's bundled sample images (`skimage/data/*`, public domain / CC0, see
  `skimage/data/README.txt`);
- sounds: Debian `sound-theme-freedesktop` (`/usr/share/sounds/freedesktop/stereo/*.oga`, CC-BY-SA 3.0 / GPL-2+,
  see `/usr/share/doc/sound-theme-freedesktop/copyright`);
- speech: `espeak-ng` (GPL-3+) reading the sentences below with several of its English voices and speeds.

LLP mapping: Speech (espeak sentences; visual Speech = a person picture on screen while speech is heard),
Telephone_bell_ringing (freedesktop phone sounds), Fire_alarm (the freedesktop alarm clock), Cat (`chelsea`),
Motorcycle (`motorcycle_left/right`). The other 20 LLP classes never occur; the remaining pictures and sounds
are unlabelled distractors. The held-out wordings (`test`) are used only in test clips, and the held-out
sentences are spoken only in test clips.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Picture:
    """A picture category: sample images that show it, its LLP visual class and how queries describe it."""

    name: str
    images: tuple[str, ...]
    llp: str | None
    person: bool
    train: tuple[str, ...]
    test: tuple[str, ...]


@dataclass(frozen=True)
class Sound:
    """A sound category from the freedesktop theme; `repeat` plays short sounds back to back (a phone rings on)."""

    name: str
    files: tuple[str, ...]
    llp: str | None
    repeat: tuple[int, int]
    max_s: float
    train: tuple[str, ...]
    test: tuple[str, ...]


PICTURES: tuple[Picture, ...] = (
    Picture("cat", ("chelsea",), "Cat", False,
            ("a cat is on screen", "we see a ginger cat", "a cat looks at the camera"),
            ("a tabby kitten is visible", "the picture of the cat appears")),
    Picture("motorcycle", ("motorcycle_left", "motorcycle_right"), "Motorcycle", False,
            ("a motorcycle is shown", "we see a motorbike", "a parked motorbike is on screen"),
            ("a red motorcycle appears in the frame", "the shot of the bike")),
    Picture("astronaut", ("astronaut",), None, True,
            ("an astronaut in a spacesuit", "a woman in an orange space suit", "we see an astronaut"),
            ("a person posing in front of a flag in a space suit", "the astronaut appears")),
    Picture("cameraman", ("camera",), None, True,
            ("a man with a camera on a tripod", "a photographer is shown", "we see a man behind a camera"),
            ("a person standing with his camera outdoors", "the black and white photo of the cameraman")),
    Picture("coffee", ("coffee",), None, False,
            ("a cup of coffee", "we see a coffee cup on a saucer", "a mug of coffee is shown"),
            ("an espresso on a plate appears", "the shot of a hot drink")),
    Picture("rocket", ("rocket",), None, False,
            ("a rocket on the launch pad", "we see a rocket", "a space rocket is shown"),
            ("a launch vehicle ready for lift-off", "the picture of the rocket")),
    Picture("moon", ("moon",), None, False,
            ("the surface of the moon", "we see lunar craters", "a grey picture of the moon"),
            ("a close-up of the moon's surface", "the moon appears")),
    Picture("coins", ("coins",), None, False,
            ("a collection of old coins", "we see coins", "a set of coins is shown"),
            ("many old metal coins appear", "the shot of the coin collection")),
    Picture("space", ("hubble_deep_field",), None, False,
            ("a picture of distant galaxies", "we see deep space", "stars and galaxies are shown"),
            ("the night sky full of galaxies appears", "a telescope image of space")),
    Picture("bricks", ("brick",), None, False,
            ("a brick wall", "we see bricks", "a wall of bricks is shown"),
            ("a close-up of a brick wall appears", "the shot of the brickwork")),
)

SOUNDS: tuple[Sound, ...] = (
    Sound("phone", ("phone-incoming-call", "phone-outgoing-calling"), "Telephone_bell_ringing", (2, 3), 6.0,
          ("a phone rings", "the telephone is ringing", "a ringtone plays"),
          ("someone's phone starts ringing", "an incoming call rings out")),
    Sound("alarm", ("alarm-clock-elapsed",), "Fire_alarm", (1, 1), 6.0,
          ("an alarm goes off", "the alarm clock beeps", "a loud alarm sounds"),
          ("the moment the alarm starts", "a beeping alarm is triggered")),
)

# Short interface sounds mixed in as unlabelled distractors (no LLP class, no queries).
DISTRACTOR_SOUNDS: tuple[str, ...] = (
    "bell", "complete", "message-new-instant", "service-login", "trash-empty", "camera-shutter",
    "suspend-error", "dialog-warning", "window-attention", "service-logout",
)

# espeak-ng voices (different voices and speeds stand in for different speakers).
VOICES: tuple[str, ...] = ("en-us", "en-gb", "en-gb-scotland", "en-029", "en-us-nyc", "en-gb-x-rp")
WORDS_PER_MINUTE: tuple[int, int] = (135, 175)

# (sentence, topic): queries about speech name the topic, never quote the sentence.
SENTENCES: tuple[tuple[str, str], ...] = (
    ("Please remember to lock the back door tonight.", "locking the back door"),
    ("The delivery truck will arrive after lunch.", "a delivery truck"),
    ("Our meeting has moved to the third floor.", "moving the meeting"),
    ("Can you tell me the password for the network?", "the network password"),
    ("The weather will be cold and rainy tomorrow.", "the weather forecast"),
    ("I left my keys on the kitchen table.", "lost keys"),
    ("The train to the city leaves at eight.", "the train schedule"),
    ("We need more milk and bread from the shop.", "shopping for groceries"),
    ("The printer on this floor is out of paper.", "the broken printer"),
    ("Dinner will be ready in about ten minutes.", "dinner being ready"),
    ("Turn left at the bank and park behind it.", "directions to the parking"),
    ("The children are playing football in the garden.", "children playing football"),
    ("My flight to Berlin was cancelled again.", "a cancelled flight"),
    ("The doctor can see you on Monday morning.", "a doctor's appointment"),
    ("Somebody spilled coffee on the new carpet.", "a stain on the carpet"),
    ("The battery of my phone is almost empty.", "a low phone battery"),
    ("Let us water the plants before we leave.", "watering the plants"),
    ("The concert starts at nine in the town hall.", "the concert"),
    ("Our team won the match by two goals.", "winning the match"),
    ("The museum is closed for repairs this week.", "the closed museum"),
    ("I would like a table for four people, please.", "booking a table"),
    ("The elevator is broken, take the stairs.", "the broken elevator"),
    ("Please send me the report before Friday.", "the report deadline"),
    ("The new bakery sells excellent bread.", "the new bakery"),
    ("A package arrived for you this afternoon.", "a package delivery"),
    ("The heating in the office does not work.", "the office heating"),
    ("We are going camping in the mountains.", "a camping trip"),
    ("The library books are due next Tuesday.", "returning library books"),
    ("Your taxi is waiting outside the hotel.", "a waiting taxi"),
    ("The bridge is closed because of the flood.", "the flooded bridge"),
    ("I am learning to play the piano.", "piano lessons"),
    ("The restaurant serves fish on Fridays.", "the restaurant menu"),
    ("Do not forget your umbrella today.", "taking an umbrella"),
    ("The bus was late again this morning.", "the late bus"),
    ("She painted the fence bright green.", "painting the fence"),
    ("The store opens at seven on weekdays.", "the store's opening hours"),
    ("Our neighbours adopted a small puppy.", "the neighbours' puppy"),
    ("The exam results come out next week.", "exam results"),
    ("Please switch off the lights when you go.", "switching off the lights"),
    ("The car needs new tyres before winter.", "new tyres for the car"),
    ("We should book the hotel for the holiday.", "booking a hotel"),
    ("The computer keeps restarting by itself.", "a computer problem"),
    ("Grandma is baking an apple pie.", "baking a pie"),
    ("The swimming pool is open until ten.", "the swimming pool"),
    ("I need to renew my passport soon.", "renewing a passport"),
    ("The garden gate was left open all night.", "the open garden gate"),
    ("Tickets for the game are sold out.", "sold-out tickets"),
    ("The fridge is making a strange noise.", "the noisy fridge"),
)
# Every fourth sentence is held out: spoken only in test clips.
HELD_OUT_SENTENCES: frozenset[int] = frozenset(range(3, len(SENTENCES), 4))

SPEECH_TEMPLATES: dict[str, tuple[str, ...]] = {
    "train": ("someone talks about {topic}", "a voice mentions {topic}", "the speaker says something about {topic}"),
    "test": ("the moment someone brings up {topic}", "when the person refers to {topic}"),
}


def sentences_for(split: str) -> list[tuple[str, str]]:
    """The sentences a clip of `split` may speak: held-out ones for test, the others for train and val."""
    held = split == "test"
    return [s for i, s in enumerate(SENTENCES) if (i in HELD_OUT_SENTENCES) == held]


def wording_split(split: str) -> str:
    """Which wording bank a clip of `split` uses: test clips the held-out wordings, the others the training ones."""
    return "test" if split == "test" else "train"


def covered_llp_classes() -> list[str]:
    """The LLP classes the corpus can contain (audio or visual)."""
    names = {"Speech"} | {p.llp for p in PICTURES if p.llp} | {s.llp for s in SOUNDS if s.llp}
    return sorted(names)
