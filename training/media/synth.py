"""Builds clips from media that installed packages carry, for the demo, the tests and the benchmarks.

Sources (nothing is downloaded from a hub):
- speech: `espeak-ng` (Debian package espeak-ng) reading a known text;
- sound events: Debian's `sound-theme-freedesktop` recordings (phone ringing, alarm clock, bell; CC-BY-SA/GPL,
  see /usr/share/doc/sound-theme-freedesktop/copyright);
- pictures: scikit-image's bundled sample images (astronaut, camera man, motorcycle, coffee, cat; public domain / CC0).
Everything is encoded with PyAV (H.264 + AAC in MP4 by default).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np

from models.errors import BadInput

RATE = 16_000
FREEDESKTOP_SOUNDS = Path("/usr/share/sounds/freedesktop/stereo")


def speak(text: str, rate: int = RATE, words_per_minute: int = 150, voice: str = "en-us") -> np.ndarray:
    """Speech for `text` from espeak-ng, as float32 mono at `rate`."""
    exe = shutil.which("espeak-ng") or shutil.which("espeak")
    if exe is None:
        raise BadInput("espeak-ng is not installed (apt-get install espeak-ng)")
    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / "speech.wav"
        subprocess.run([exe, "-v", voice, "-s", str(words_per_minute), "-w", str(wav), text],
                       check=True, capture_output=True)
        return load_audio(wav, rate)


def load_audio(path: str | Path, rate: int = RATE) -> np.ndarray:
    """Decode any audio file with PyAV into float32 mono at `rate`."""
    resampler = av.AudioResampler(format="flt", layout="mono", rate=rate)
    chunks = []
    with av.open(str(path)) as container:
        for frame in container.decode(audio=0):
            chunks.extend(f.to_ndarray().reshape(-1) for f in resampler.resample(frame))
    chunks.extend(f.to_ndarray().reshape(-1) for f in resampler.resample(None))
    return np.concatenate(chunks).astype(np.float32) if chunks else np.zeros(0, np.float32)


def sound(name: str, rate: int = RATE) -> np.ndarray:
    """A freedesktop theme sound by name, e.g. 'phone-incoming-call', 'alarm-clock-elapsed', 'bell'."""
    path = FREEDESKTOP_SOUNDS / f"{name}.oga"
    if not path.exists():
        raise BadInput(f"{path} missing (apt-get install sound-theme-freedesktop)")
    return load_audio(path, rate)


def tone(freq: float, seconds: float, rate: int = RATE, amplitude: float = 0.5) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (amplitude * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def place(track: np.ndarray, clip: np.ndarray, at_s: float, rate: int = RATE, gain: float = 1.0) -> None:
    """Mix `clip` into `track` starting at `at_s` seconds (in place, truncated at the end)."""
    start = int(round(at_s * rate))
    end = min(track.size, start + clip.size)
    if end > start:
        track[start:end] += gain * clip[: end - start]


def sample_image(name: str) -> np.ndarray:
    """An RGB scikit-image sample image by name (astronaut, camera, motorcycle_left, coffee, chelsea)."""
    from skimage import data  # imported lazily: only the demo/test builders need scikit-image

    loader = getattr(data, name, None)
    if loader is not None:
        img = loader()
    else:
        from skimage import io
        img = io.imread(Path(data.__file__).parent / f"{name}.png")
    if img.ndim == 2:
        img = np.stack([img] * 3, axis=-1)
    return np.ascontiguousarray(img[..., :3]).astype(np.uint8)


def ken_burns(image: np.ndarray, width: int, height: int, progress: float) -> np.ndarray:
    """A slowly zooming crop of `image` resized to width x height (progress in [0, 1])."""
    import cv2

    h, w = image.shape[:2]
    zoom = 1.0 + 0.15 * progress
    cw, ch = int(w / zoom), int(h / zoom)
    x0 = int((w - cw) * (0.5 + 0.3 * (progress - 0.5)))
    y0 = (h - ch) // 2
    crop = image[y0:y0 + ch, x0:x0 + cw]
    return cv2.resize(crop, (width, height), interpolation=cv2.INTER_AREA)


@dataclass
class ClipSpec:
    """What `write_clip` encodes: a frame function of time, audio, and container parameters."""

    duration_s: float
    fps: float = 25.0
    width: int = 640
    height: int = 360
    frame_fn: Callable[[float], np.ndarray] | None = None
    audio: np.ndarray | None = None
    audio_rate: int = RATE
    video_codec: str = "libx264"
    audio_codec: str = "aac"
    crf: int = 23
    faststart: bool = True  # MP4/MOV index first: plays and streams over HTTP without range requests


def write_clip(path: str | Path, spec: ClipSpec) -> Path:
    """Encode `spec` to `path` (container chosen by extension). Video and/or audio may be absent."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    options = {"movflags": "+faststart"} if spec.faststart and path.suffix.lower() in (".mp4", ".mov", ".m4v") else {}
    with av.open(str(path), mode="w", options=options) as out:
        vstream = astream = None
        if spec.frame_fn is not None:
            from fractions import Fraction
            vstream = out.add_stream(spec.video_codec, rate=Fraction(spec.fps).limit_denominator(1001))
            vstream.width, vstream.height, vstream.pix_fmt = spec.width, spec.height, "yuv420p"
            if spec.video_codec == "libx264":
                # A keyframe every second: streams can be joined (RTSP tests) and seeked at any second.
                vstream.options = {"crf": str(spec.crf), "preset": "veryfast", "g": str(max(1, round(spec.fps)))}
        if spec.audio is not None:
            astream = out.add_stream(spec.audio_codec, rate=spec.audio_rate if spec.audio_codec != "aac"
                                     else max(spec.audio_rate, 16000))
            astream.layout = "mono"
        n_frames = int(round(spec.duration_s * spec.fps)) if vstream is not None else 0
        audio = None if astream is None else np.clip(spec.audio, -1, 1).astype(np.float32)
        a_pos, a_block = 0, 1024
        for i in range(max(n_frames, 1)):
            if vstream is not None:
                img = spec.frame_fn(i / spec.fps)
                frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(img), format="rgb24")
                frame.pts = None
                for pkt in vstream.encode(frame):
                    out.mux(pkt)
            if audio is not None:
                until = audio.size if vstream is None else int(round((i + 1) / spec.fps * spec.audio_rate))
                while a_pos < min(until, audio.size):
                    block = audio[a_pos:a_pos + a_block]
                    af = av.AudioFrame.from_ndarray(block.reshape(1, -1), format="flt", layout="mono")
                    af.sample_rate = spec.audio_rate
                    af.pts = a_pos
                    for pkt in astream.encode(af):
                        out.mux(pkt)
                    a_pos += block.size
        for stream in (vstream, astream):
            if stream is not None:
                for pkt in stream.encode(None):
                    out.mux(pkt)
    return path


DEMO_TEXT = ("Hello and welcome to Foresight. The phone is ringing in the kitchen. "
             "Please remember to check the front door before you leave.")


@dataclass
class DemoTruth:
    """What the demo clip contains and when (seconds), for quality checks."""

    text: str
    speech: tuple[float, float]
    phone: tuple[float, float]
    alarm: tuple[float, float]
    duration_s: float


def build_demo_clip(path: str | Path, width: int = 640, height: int = 360, fps: float = 25.0) -> DemoTruth:
    """A ~22 s clip: picture slideshow, espeak speech, a phone ringing and an alarm clock."""
    speech = speak(DEMO_TEXT)
    phone = sound("phone-incoming-call")
    alarm = sound("alarm-clock-elapsed")
    speech_at = 1.0
    phone_at = speech_at + speech.size / RATE + 1.0
    alarm_at = phone_at + phone.size / RATE + 1.0
    duration = float(np.ceil(alarm_at + alarm.size / RATE + 1.5))
    track = np.zeros(int(duration * RATE), np.float32)
    place(track, speech, speech_at, gain=0.9)
    place(track, phone, phone_at, gain=0.8)
    place(track, alarm, alarm_at, gain=0.8)
    images = [sample_image(n) for n in ("astronaut", "camera", "motorcycle_left", "coffee", "chelsea")]
    per = duration / len(images)

    def frame(t: float) -> np.ndarray:
        i = min(int(t / per), len(images) - 1)
        return ken_burns(images[i], width, height, (t - i * per) / per)

    write_clip(path, ClipSpec(duration, fps, width, height, frame, track))
    return DemoTruth(DEMO_TEXT, (speech_at, speech_at + speech.size / RATE),
                     (phone_at, phone_at + phone.size / RATE), (alarm_at, alarm_at + alarm.size / RATE), duration)


def flash_tone_clip(path: str | Path, duration_s: float = 6.0, event_s: Sequence[float] = (2.0, 4.0),
                    fps: float = 30.0, audio_rate: int = 44_100) -> Path:
    """Dark frames and silence, except a white flash and a 1 kHz beep of 200 ms at each time in `event_s`."""
    track = np.zeros(int(duration_s * audio_rate), np.float32)
    for t in event_s:
        place(track, tone(1000.0, 0.2, audio_rate), t, rate=audio_rate)

    def frame(t: float) -> np.ndarray:
        lit = any(e <= t < e + 0.2 for e in event_s)
        return np.full((240, 320, 3), 255 if lit else 16, np.uint8)

    return write_clip(path, ClipSpec(duration_s, fps, 320, 240, frame, track, audio_rate=audio_rate))
