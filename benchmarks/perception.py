"""Cost of each perception encoder per second of 720p30 video, and the embedded stack's real-time factor.

Every number is measured in this run on the same clip, so the ratios against the reference (decoding the
file into 1-s segments: PyAV decode of every frame, 2 fps sampled RGB at 640 px, 16 kHz audio) hold even on
a loaded machine, where absolute milliseconds do not. Everything runs on one thread per component.

    python benchmarks/perception.py --minutes 1
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from benchmarks._media import long_clip  # noqa: E402


def timed(fn, items) -> float:
    t0 = time.perf_counter()
    for item in items:
        fn(item)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=1.0, help="length of the 720p30 clip (built once, cached)")
    ap.add_argument("--seconds", type=int, default=40, help="seconds of it to encode")
    args = ap.parse_args()

    import cv2
    import torch

    torch.set_num_threads(1)
    cv2.setNumThreads(1)
    from models.audio.asr import make_recognizer
    from models.encoders.audio_features import AudioFeatureConfig, AudioFeatures, log_mel
    from models.encoders.embedded import EmbeddedEncoder
    from models.encoders.speech_embed import SpeechEmbedder
    from models.encoders.visual import VisualAnalyzer
    from pipelines.media.segmenter import iter_segments

    clip = long_clip(args.minutes)
    t0 = time.perf_counter()
    segments = []
    for seg in iter_segments(clip):
        segments.append(seg)
        if len(segments) >= args.seconds:
            break
    decode_s = time.perf_counter() - t0
    n = len(segments)
    print(f"clip {clip.name}: {n} s encoded; reference = decode into segments {decode_s / n * 1000:.0f} ms per second")

    va = VisualAnalyzer()
    af = AudioFeatures()
    costs: dict[str, float] = {}
    costs["YOLOv3-tiny (1 frame/s)"] = timed(lambda s: va.detector.detect(s.frames[len(s.frames) // 2]), segments)
    costs["pose, VIDEO mode (all sampled frames)"] = timed(lambda s: va.pose.track(s.frames, s.frame_times), segments)
    costs["faces (1 frame/s)"] = timed(lambda s: va.faces.detect(s.frames[len(s.frames) // 2]), segments)
    costs["motion/cuts/camera checks"] = timed(lambda s: va.stats.measure(s.frames, s.frame_times), segments)
    costs["YAMNet tags"] = timed(lambda s: af.tagger.scores(s.audio), segments)
    costs["Silero VAD"] = timed(lambda s: af.vad.feed(s.audio, s.start), segments)
    costs["log-mel statistics"] = timed(lambda s: log_mel(s.audio), segments)
    audio = np.concatenate([s.audio for s in segments])
    asr = make_recognizer("tiny.en")
    costs["ASR faster-whisper tiny.en (all audio)"] = timed(lambda a: asr.transcribe(a, 0.0), [audio])
    words = [w.__dict__ | {"word": w.text} for seg in asr.transcribe(audio, 0.0) for w in seg.words]
    embedder = SpeechEmbedder()
    embedder.encoder.encode("load the model outside the timing")
    costs["speech embedding MiniLM"] = timed(lambda s: embedder.embed_second(words, s.start), segments)

    print(f"\n{'component':42s} {'ms per video s':>15s} {'x decode':>9s}")
    for name, total in costs.items():
        print(f"{name:42s} {total / n * 1000:15.1f} {total / decode_s:9.2f}")
    serial = decode_s + sum(costs.values())
    print(f"{'sum (one core, serial)':42s} {serial / n * 1000:15.1f} {serial / decode_s:9.2f}")

    # The stack as deployed: visual and audio encoders in separate workers, decode in a third.
    stack = EmbeddedEncoder()
    stack.reset()
    audio_only = AudioFeatures(AudioFeatureConfig())
    with ThreadPoolExecutor(2) as pool:
        t0 = time.perf_counter()
        vis = pool.submit(lambda: [stack.encode_visual(s.frames, s.frame_times) for s in segments])
        aud = pool.submit(lambda: ([audio_only.vector(audio_only.analyze(s.audio, s.start)) for s in segments],
                                   asr.transcribe(audio, 0.0), [embedder.embed_second(words, s.start + 0.5)
                                                                for s in segments]))
        vis.result(), aud.result()
        parallel = time.perf_counter() - t0
    print(f"\nembedded stack, 2 workers (visual | audio + ASR + MiniLM): {parallel / n * 1000:.0f} ms per video s")
    print(f"real-time factor (video seconds per wall second), encoders only, 2 workers: {n / parallel:.1f}x")
    print(f"estimated real-time factor with decode sharing the 2 cores ((decode + 2 x stack wall) / 2): "
          f"{n / ((decode_s + parallel * 2) / 2):.1f}x   (target >= 4x)")
    print(f"real-time factor, everything serial on one core: {n / serial:.1f}x")
    print(f"load average during the run: {os.getloadavg()[0]:.1f}")
    va.close()
    stack.close()


if __name__ == "__main__":
    main()
