"""Perception quality on a clip with known content, built from package-carried media (`pipelines/synth.py`).

The clip: three espeak sentences separated by a phone ringing and an alarm clock (freedesktop sounds), over a
slideshow of scikit-image pictures, people (astronaut, camera man) alternating with none (motorcycle, coffee,
cat). Printed:
- speech-segment F1 at IoU 0.5 (Silero VAD spans, streamed second by second, against the sentence spans);
- word error rate of faster-whisper tiny.en run on the VAD spans (as the live spine does);
- audio-tag hit rate: seconds lying inside the phone / alarm sounds whose top-5 YAMNet tags name that sound;
- person hit rate on seconds showing a person, and the false-person rate on seconds showing none.

    python benchmarks/perception_quality.py
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from models.trisense.metrics import temporal_iou as iou  # noqa: E402

RATE = 16_000
SENTENCES = ("Good morning, the delivery will arrive after lunch today.",
             "Please turn off the oven before you go to bed.",
             "The meeting has moved to the small room upstairs.")
PICTURES = (("astronaut", True), ("motorcycle_left", False), ("camera", True), ("coffee", False),
            ("astronaut", True), ("chelsea", False), ("camera", True), ("motorcycle_left", False))
PHONE_TAGS = {"Telephone", "Telephone bell ringing", "Ringtone", "Telephone dialing, DTMF", "Alarm"}
ALARM_TAGS = {"Alarm", "Alarm clock", "Beep, bleep", "Buzzer", "Smoke detector, smoke alarm", "Bell", "Ding",
              "Siren", "Clock", "Ringtone"}
PICTURE_S = 3.0


def build(path: Path) -> dict:
    from training.media.synth import ClipSpec, ken_burns, place, sample_image, sound, speak, write_clip

    track_parts: list[tuple[str, float, np.ndarray]] = []
    t = 1.0
    speech, sounds = [], []
    extras = [("phone", sound("phone-incoming-call")), ("alarm", sound("alarm-clock-elapsed"))]
    for i, text in enumerate(SENTENCES):
        audio = speak(text)
        track_parts.append(("speech", t, audio))
        speech.append((t, t + audio.size / RATE, text))
        t += audio.size / RATE + 1.0
        if i < len(extras):
            name, clip = extras[i]
            track_parts.append((name, t, clip))
            sounds.append((name, t, t + clip.size / RATE))
            t += clip.size / RATE + 1.0
    duration = float(np.ceil(t + 1.0))
    track = np.zeros(int(duration * RATE), np.float32)
    for _, at, audio in track_parts:
        place(track, audio, at, gain=0.8)
    images = {name: sample_image(name) for name, _ in PICTURES}

    def frame(ts: float) -> np.ndarray:
        i = int(ts / PICTURE_S) % len(PICTURES)
        return ken_burns(images[PICTURES[i][0]], 640, 360, (ts % PICTURE_S) / PICTURE_S)

    write_clip(path, ClipSpec(duration, 25.0, 640, 360, frame, track))
    return {"duration": duration, "speech": speech, "sounds": sounds}


def segment_f1(pred: list[tuple[float, float]], truth: list[tuple[float, float]], thr: float = 0.5) -> float:
    """Greedy one-to-one matching at IoU >= thr."""
    used, hits = set(), 0
    for p in pred:
        best = max(((iou(p, t), j) for j, t in enumerate(truth) if j not in used), default=(0.0, None))
        if best[1] is not None and best[0] >= thr:
            used.add(best[1])
            hits += 1
    precision = hits / len(pred) if pred else 0.0
    recall = hits / len(truth) if truth else 0.0
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def word_error_rate(ref: str, hyp: str) -> float:
    def clean(s: str) -> list[str]:
        return [w.strip(".,!?;:").lower() for w in s.split() if w.strip(".,!?;:")]

    r, h = clean(ref), clean(hyp)
    d = list(range(len(h) + 1))
    for i in range(1, len(r) + 1):
        prev, d = d, [i] + [0] * len(h)
        for j in range(1, len(h) + 1):
            d[j] = min(prev[j] + 1, d[j - 1] + 1, prev[j - 1] + (r[i - 1] != h[j - 1]))
    return d[len(h)] / max(len(r), 1)


def main() -> None:
    import torch

    torch.set_num_threads(1)
    from models.audio.asr import make_recognizer
    from models.audio.vad import StreamingVAD
    from models.encoders.embedded import EmbeddedEncoder
    from pipelines.media.segmenter import iter_segments

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "quality.mp4"
        truth = build(path)
        segments = list(iter_segments(path))
    encoder = EmbeddedEncoder()
    vad = StreamingVAD()
    asr = make_recognizer("tiny.en")
    spans, per_second = [], []
    audio = np.concatenate([s.audio for s in segments])
    for seg in segments:
        per_second.append(encoder.encode_second(seg.frames, seg.frame_times, seg.audio, seg.start, seg.index))
        closed, _ = vad.feed(seg.audio, seg.start)
        spans.extend((s.start, s.end) for s in closed)
    last = vad.close()
    if last is not None:
        spans.append((last.start, last.end))
    f1 = segment_f1(spans, [(a, b) for a, b, _ in truth["speech"]])
    hyp = " ".join(t.text for a, b in spans for t in asr.transcribe(audio[int(a * RATE): int(b * RATE)], a))
    wer = word_error_rate(" ".join(text for *_, text in truth["speech"]), hyp)

    tag_hits = tag_total = 0
    for name, a, b in truth["sounds"]:
        wanted = PHONE_TAGS if name == "phone" else ALARM_TAGS
        for sec in per_second:
            if sec.start >= a and sec.start + 1 <= b:
                tag_total += 1
                tag_hits += bool(wanted & set(sec.detections.get("audio_tags", {})))
    person_hits = person_total = false_people = empty_total = 0
    for sec in per_second:
        shows_person = PICTURES[int(sec.start / PICTURE_S) % len(PICTURES)][1]
        if int(sec.start / PICTURE_S) != int((sec.start + 0.999) / PICTURE_S):
            continue  # a second that straddles a picture change
        found = sec.detections.get("persons", 0) > 0
        if shows_person:
            person_total, person_hits = person_total + 1, person_hits + found
        else:
            empty_total, false_people = empty_total + 1, false_people + found
    print(f"clip: {truth['duration']:.0f} s, {len(truth['speech'])} sentences, sounds {[s[0] for s in truth['sounds']]}")
    print(f"speech spans predicted {[(round(a, 2), round(b, 2)) for a, b in spans]}")
    print(f"speech spans truth     {[(round(a, 2), round(b, 2)) for a, b, _ in truth['speech']]}")
    print(f"speech-segment F1 @ IoU 0.5: {f1:.2f}")
    print(f"WER (tiny.en on VAD spans): {wer * 100:.1f}%   hyp: {hyp}")
    print(f"audio-tag hit rate at the right seconds: {tag_hits}/{tag_total} = {tag_hits / max(tag_total, 1):.2f}")
    print(f"person hit rate: {person_hits}/{person_total} = {person_hits / max(person_total, 1):.2f}; "
          f"false-person rate on seconds without people: {false_people}/{empty_total}")
    encoder.close()


if __name__ == "__main__":
    main()
