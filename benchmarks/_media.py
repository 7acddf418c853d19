"""Benchmark media: a long 720p30 clip with speech and sound events, built once and cached under data/bench/."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from training.media.synth import RATE, ClipSpec, ken_burns, place, sample_image, sound, speak, write_clip

ROOT = Path(__file__).resolve().parents[1]


def long_clip(minutes: float = 5.0, width: int = 1280, height: int = 720, fps: float = 30.0) -> Path:
    path = ROOT / "data" / "bench" / f"long_{minutes:g}min_{height}p{fps:g}.mp4"
    if path.exists():
        return path
    duration = minutes * 60.0
    track = np.zeros(int(duration * RATE), np.float32)
    speech = speak("This is a long benchmark recording. Someone is talking about the weather and the traffic "
                   "on the way to work, and then the phone rings.")
    phone, alarm = sound("phone-incoming-call"), sound("alarm-clock-elapsed")
    t = 2.0
    while t < duration - 20:  # speech about a third of the time, sounds in between
        place(track, speech, t)
        place(track, phone, t + speech.size / RATE + 3)
        place(track, alarm, t + speech.size / RATE + 8)
        t += speech.size / RATE + 20
    images = [sample_image(n) for n in ("astronaut", "camera", "motorcycle_left", "coffee", "chelsea")]
    noise = np.random.default_rng(0).integers(0, 24, (height, width, 3), dtype=np.uint8)

    def frame(ts: float) -> np.ndarray:
        i = int(ts / 12) % len(images)
        img = ken_burns(images[i], width, height, (ts % 12) / 12)
        return img + np.roll(noise, int(ts * 30) * 7, axis=1)  # moving grain: realistic decode cost

    print(f"building {path} ({minutes:g} min {height}p{fps:g}) ...", flush=True)
    return write_clip(path, ClipSpec(duration, fps, width, height, frame, track))
