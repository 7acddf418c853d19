"""A small synthetic grounding corpus where each modality answers a different kind of query.

Real per-second features need perception encoders that do not exist yet, so this builds clips whose
features follow the real interfaces:

* visual (128-d) and audio (64-d) seconds are a drifting background plus a class prototype during
  planted events (8 visual classes, 8 sound classes); they stand in for encoder outputs and carry
  no text, so the model must learn which query wordings go with which prototype;
* speech seconds are real MiniLM embeddings of the words spoken in each second (`speech_features`),
  from utterances placed in the clip's transcript, with filler chatter around them;
* four concepts exist in two modalities (a dog seen vs. barking, a car passing vs. its horn, a door
  opening vs. knocking, a phone seen vs. ringing) and are often planted in both at different
  times, so the query's wording alone decides which modality to trust;
* detector-style label events (AudioSet-like tags, COCO-like object names, with misses and false
  positives) feed the text-matching baseline.

The held-out split uses fresh clips, different query wordings for every audio/visual class and
different spoken sentences with their own queries: training never sees them.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from models.sentences import SentenceEncoder, shared_encoder
from models.trisense.features import ClipFeatures
from models.trisense.text import speech_features
from training.trisense.data import MomentRecord, save_moment_jsonl

VISUAL_DIM = 128
AUDIO_DIM = 64
SPEECH_CONTEXT_S = 1.0


@dataclass(frozen=True)
class Concept:
    name: str
    modality: str  # "visual" | "audio"
    label: str | None  # what a detector would emit, None if no detector class exists
    train: tuple[str, ...]
    test: tuple[str, ...]


CONCEPTS: tuple[Concept, ...] = (
    Concept("dog_bark", "audio", "Bark", ("a dog barks", "the sound of a dog barking", "barking can be heard"),
            ("you can hear a dog woofing", "a hound barks loudly")),
    Concept("car_horn", "audio", "Vehicle horn, car horn, honking",
            ("a car horn honks", "someone honks the horn", "the beep of a car horn"),
            ("a driver sounds the horn", "honking from a vehicle")),
    Concept("alarm", "audio", "Alarm", ("the alarm starts ringing", "an alarm goes off", "a loud alarm sounds"),
            ("the moment the alarm starts", "a buzzing alarm is triggered")),
    Concept("glass_break", "audio", "Shatter", ("glass shatters", "the sound of breaking glass",
                                                "a window smashes"),
            ("something made of glass breaks", "a crash of shattering glass")),
    Concept("knock", "audio", "Knock", ("someone knocks on the door", "a knocking sound", "a knock at the door"),
            ("a person raps on a door", "there is knocking")),
    Concept("phone_ring", "audio", "Telephone bell ringing", ("a phone rings", "the telephone is ringing",
                                                              "a ringtone plays"),
            ("someone's phone starts ringing", "a telephone rings out")),
    Concept("applause", "audio", "Applause", ("people clap", "applause from the audience", "a crowd applauds"),
            ("hands clapping loudly", "the audience gives applause")),
    Concept("engine", "audio", "Engine", ("an engine revs", "the roar of a motor", "a motorbike engine starts"),
            ("a vehicle engine roars", "motor noise starts up")),
    Concept("dog_seen", "visual", "dog", ("a dog walks across the room", "a dog appears on screen", "we see a dog"),
            ("a dog is visible in the frame", "a puppy runs past the camera")),
    Concept("car_seen", "visual", "car", ("a car drives past", "a car passes by",
                                          "a vehicle drives through the scene"),
            ("an automobile crosses the frame", "a car goes by on the street")),
    Concept("door_opens", "visual", None, ("a door opens", "someone opens the door", "the door swings open"),
            ("the entrance door is opened", "a door is pulled open")),
    Concept("person_waves", "visual", "person", ("a person waves", "someone waves their hand",
                                                 "a man waves at the camera"),
            ("somebody is waving hello", "a woman raises her hand and waves")),
    Concept("lights_off", "visual", None, ("the lights go off", "the room goes dark",
                                           "someone turns off the light"),
            ("it suddenly becomes dark", "the lamp is switched off")),
    Concept("phone_seen", "visual", "cell phone", ("someone looks at a phone", "a person holds a mobile phone",
                                                   "a smartphone is shown"),
            ("a cellphone is held up to the camera", "a man checks his phone")),
    Concept("person_falls", "visual", "person", ("a person falls down", "someone trips and falls",
                                                 "a man collapses to the floor"),
            ("somebody tumbles over", "a person drops to the ground")),
    Concept("cat_seen", "visual", "cat", ("a cat jumps on the table", "a cat appears", "we see a cat"),
            ("a kitten leaps onto the desk", "a cat is in view")),
)

# Concepts that exist in both modalities: planting one often plants the other elsewhere in the clip.
CONFUSABLE = {"dog_seen": "dog_bark", "car_seen": "car_horn", "door_opens": "knock", "phone_seen": "phone_ring"}
CONFUSABLE.update({v: k for k, v in list(CONFUSABLE.items())})

SPEECH_TRAIN: tuple[tuple[str, str], ...] = (
    ("could you tell me the password for the wifi", "someone asks for the wifi password"),
    ("the meeting has been moved to three o'clock", "they say the meeting was rescheduled"),
    ("please remember to bring your passport tomorrow", "someone reminds people to bring a passport"),
    ("I think the printer on the second floor is broken", "a person says the printer is broken"),
    ("the delivery truck will arrive around noon", "they mention when the delivery arrives"),
    ("we need to order more coffee for the kitchen", "someone says they need more coffee"),
    ("the fire exit is at the end of the hallway", "someone explains where the fire exit is"),
    ("can you turn the music down a little", "a person asks to lower the music"),
    ("my flight to berlin was cancelled this morning", "someone talks about a cancelled flight"),
    ("the quarterly sales numbers look very good", "they discuss good sales results"),
    ("don't forget to lock the back door tonight", "someone reminds others to lock the door"),
    ("the doctor said I should rest for a week", "a person talks about advice from a doctor"),
    ("let's order pizza for dinner tonight", "someone suggests getting pizza"),
    ("the train to the airport leaves every twenty minutes", "they talk about the airport train schedule"),
    ("I lost my keys somewhere in the parking lot", "someone says they lost their keys"),
    ("the new software update fixed the login problem", "a person says the update fixed a bug"),
    ("it is going to rain heavily this afternoon", "someone talks about the weather forecast"),
    ("please send me the report before friday", "someone asks for a report by friday"),
    ("the baby finally fell asleep an hour ago", "they say the baby is sleeping"),
    ("we should paint the living room blue", "someone proposes a paint color"),
    ("the elevator is out of order again", "someone complains the elevator is broken"),
    ("happy birthday, I hope you like the present", "a person wishes someone happy birthday"),
    ("the bank closes at five on weekdays", "they mention the bank's opening hours"),
    ("I'll pick the kids up from school today", "someone offers to collect the children"),
)
SPEECH_TEST: tuple[tuple[str, str], ...] = (
    ("what is the code to unlock this computer", "someone asks for a password"),
    ("our team won the football match last night", "they talk about winning a game"),
    ("the water pipe in the bathroom is leaking", "someone reports a leak"),
    ("I'm allergic to peanuts so please check the food", "a person mentions a food allergy"),
    ("the concert tickets sold out in five minutes", "they say the tickets sold out"),
    ("can someone help me carry these boxes upstairs", "someone asks for help carrying things"),
    ("the hotel room was much smaller than expected", "a person complains about a hotel room"),
    ("I start my new job on monday", "someone talks about starting a new job"),
    ("the dentist appointment is next tuesday morning", "they mention a dentist appointment"),
    ("there is a strange smell coming from the kitchen", "someone notices an odd smell"),
)
FILLERS: tuple[str, ...] = (
    "yeah I know what you mean", "okay let's see", "that sounds good to me", "hmm I'm not sure about that",
    "right, exactly", "so anyway as I was saying", "well that's interesting", "alright then",
    "I'll think about it", "sure no problem", "oh really, since when", "uh huh, go on",
)
WORDS_PER_SECOND = 2.5


def _prototypes(seed: int) -> dict[str, np.ndarray]:
    """One fixed unit vector per class in its modality's space (shared by both splits)."""
    rng = np.random.default_rng(seed)
    protos = {}
    for c in CONCEPTS:
        dim = VISUAL_DIM if c.modality == "visual" else AUDIO_DIM
        v = rng.standard_normal(dim)
        protos[c.name] = (v / np.linalg.norm(v)).astype(np.float32)
    return protos


class _Timeline:
    """Free-interval bookkeeping so planted items of one kind never overlap."""

    def __init__(self, duration: int, rng: np.random.Generator):
        self.duration, self.rng, self.used = duration, rng, []

    def place(self, length: float) -> tuple[float, float] | None:
        for _ in range(50):
            start = float(self.rng.integers(0, max(1, int(self.duration - length))))
            span = (start, min(float(self.duration), start + length))
            if all(span[1] + 1 <= s or span[0] >= e + 1 for s, e in self.used):
                self.used.append(span)
                return span
        return None


def _unit(rng: np.random.Generator, dim: int) -> np.ndarray:
    v = rng.standard_normal(dim)
    return (v / np.linalg.norm(v)).astype(np.float32)


def make_clip(
    rng: np.random.Generator, split: str, vid: str, protos: dict[str, np.ndarray], encoder: SentenceEncoder
) -> tuple[ClipFeatures, list[dict]]:
    """One clip and its queries (`{"query","window","modality","concept"}`)."""
    T = int(rng.integers(40, 91))
    queries: list[dict] = []
    events: list[dict] = []

    # Backgrounds: scene vectors with occasional cuts, stationary noise floor for audio.
    visual = np.zeros((T, VISUAL_DIM), np.float32)
    scene, t = _unit(rng, VISUAL_DIM), 0
    while t < T:
        run = int(rng.integers(8, 30))
        visual[t : t + run] = scene
        scene, t = _unit(rng, VISUAL_DIM), t + run
    visual += 0.35 * rng.standard_normal(visual.shape).astype(np.float32) / np.sqrt(VISUAL_DIM) * 4
    audio = np.tile(_unit(rng, AUDIO_DIM), (T, 1)) + 0.35 * rng.standard_normal((T, AUDIO_DIM)).astype(
        np.float32
    ) / np.sqrt(AUDIO_DIM) * 4

    line = {"visual": _Timeline(T, rng), "audio": _Timeline(T, rng)}
    wording = "train" if split == "train" else "test"

    def plant(concept: Concept, ask: bool) -> None:
        length = float(rng.integers(3, 11) if concept.modality == "visual" else rng.integers(2, 9))
        span = line[concept.modality].place(length)
        if span is None:
            return
        s, e = int(span[0]), int(np.ceil(span[1]))
        strength = float(rng.uniform(0.8, 1.4))
        target = visual if concept.modality == "visual" else audio
        target[s:e] += strength * protos[concept.name]
        if concept.label and rng.random() < 0.85:
            events.append({"label": concept.label, "modality": concept.modality, "start": span[0], "end": span[1]})
        if ask:
            options = concept.train if wording == "train" else concept.test
            queries.append({"query": str(rng.choice(options)), "window": [span[0], span[1]],
                            "modality": concept.modality, "concept": concept.name})

    by_modality = {m: [c for c in CONCEPTS if c.modality == m] for m in ("visual", "audio")}
    planted: set[str] = set()
    for modality in ("visual", "audio"):
        n = int(rng.integers(1, 3))
        for idx in rng.choice(len(by_modality[modality]), size=n, replace=False):
            c = by_modality[modality][int(idx)]
            if c.name in planted:
                continue
            plant(c, ask=True)
            planted.add(c.name)
            twin = CONFUSABLE.get(c.name)
            if twin and twin not in planted and rng.random() < 0.6:
                plant(next(x for x in CONCEPTS if x.name == twin), ask=bool(rng.random() < 0.5))
                planted.add(twin)

    # False-positive detector labels.
    for _ in range(int(rng.poisson(0.5))):
        c = CONCEPTS[int(rng.integers(len(CONCEPTS)))]
        if c.label:
            s = float(rng.integers(0, T - 2))
            events.append({"label": c.label, "modality": c.modality, "start": s, "end": s + 2.0})

    # Speech: 1-2 answerable sentences plus fillers, non-overlapping.
    speech_line = _Timeline(T, rng)
    transcript: list[dict] = []
    bank = SPEECH_TRAIN if split == "train" else SPEECH_TEST
    asked = rng.choice(len(bank), size=int(rng.integers(1, 3)), replace=False)
    utterances = [(bank[int(i)][0], bank[int(i)][1]) for i in asked]
    utterances += [(str(rng.choice(FILLERS)), None) for _ in range(int(rng.integers(1, 4)))]
    for sentence, query in utterances:
        span = speech_line.place(len(sentence.split()) / WORDS_PER_SECOND)
        if span is None:
            continue
        transcript.append({"start": round(span[0], 2), "end": round(span[1], 2), "text": sentence})
        events.append({"label": "Speech", "modality": "audio", "start": span[0], "end": span[1]})
        if query:
            queries.append({"query": query, "window": [span[0], span[1]], "modality": "speech",
                            "concept": "speech"})
    transcript.sort(key=lambda x: x["start"])
    speech, speech_mask = speech_features(transcript, T, encoder=encoder, context_s=SPEECH_CONTEXT_S)
    clip = ClipFeatures(visual=visual, audio=audio.astype(np.float32), speech=speech, speech_mask=speech_mask,
                        transcript=transcript, events=events)
    return clip, queries


def generate(
    out_dir: str | Path,
    n_train: int = 500,
    n_test: int = 120,
    seed: int = 0,
    encoder: SentenceEncoder | None = None,
    progress: bool = True,
) -> dict:
    """Write `train.jsonl`, `test.jsonl`, `features/<vid>.npz` and `meta.json` under `out_dir`."""
    if n_train < 1 or n_test < 1:
        raise ValueError("n_train and n_test must be >= 1")
    out = Path(out_dir)
    (out / "features").mkdir(parents=True, exist_ok=True)
    encoder = encoder or shared_encoder()
    protos = _prototypes(seed)
    counts = {}
    for split, n, split_seed in (("train", n_train, seed + 1), ("test", n_test, seed + 2)):
        rng = np.random.default_rng(split_seed)
        records: list[MomentRecord] = []
        for k in tqdm(range(n), desc=f"synthetic {split}", disable=not progress):
            vid = f"syn-{split}-{k:05d}"
            clip, queries = make_clip(rng, split, vid, protos, encoder)
            clip.save(out / "features" / f"{vid}.npz")
            for j, q in enumerate(queries):
                records.append(MomentRecord(f"{vid}-{j}", q["query"], vid, [tuple(q["window"])],
                                            float(clip.num_seconds), None,
                                            {"modality": q["modality"], "concept": q["concept"]}))
        save_moment_jsonl(out / f"{split}.jsonl", records)
        counts[split] = {"clips": n, "queries": len(records)}
    meta = {"visual_dim": VISUAL_DIM, "audio_dim": AUDIO_DIM, "speech_dim": 384, "seed": seed,
            "speech_context_s": SPEECH_CONTEXT_S, "counts": counts}
    (out / "meta.json").write_text(json.dumps(meta, indent=2))
    return meta


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate the synthetic TriSense grounding corpus.")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--train-clips", type=int, default=500)
    parser.add_argument("--test-clips", type=int, default=120)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    try:
        meta = generate(args.out, args.train_clips, args.test_clips, args.seed)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(meta["counts"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
