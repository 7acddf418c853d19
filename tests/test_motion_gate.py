"""The motion gate: on a still camera the detector, faces and pose look when something moves, and at the
keep-alive only if the picture changed since they last looked; every second reports what looking at every
second reports."""

from __future__ import annotations

import av
import pytest

from models.encoders.visual import VisualAnalyzer, VisualConfig
from training.perception.static_scene import write_static_scene

WALK_S = 8  # the person enters at 8 s and is gone by 13 s


@pytest.fixture(scope="module")
def still_seconds(tmp_path_factory):
    """Each second's two sampled frames (time, RGB) of a 20-s still scene a person walks across, decoded."""
    path = write_static_scene(tmp_path_factory.mktemp("scene") / "still.mp4", 20, walk_every_s=100, width=640,
                              height=480, fps=10, first_walk_s=WALK_S)
    seconds: dict[int, list] = {}
    with av.open(str(path)) as f:
        for frame in f.decode(video=0):
            if round(frame.time * 10) % 5 == 0:
                seconds.setdefault(int(frame.time), []).append((frame.time, frame.to_ndarray(format="rgb24")))
    assert sorted(seconds) == list(range(20))
    return seconds


def _run(seconds: dict, gate: float | None) -> tuple[VisualAnalyzer, list[dict], list[int], list[int]]:
    """Analyse each second; also the seconds the detector itself was called on (counted, never timed)."""
    analyzer, rows, looked, detected = VisualAnalyzer(VisualConfig(motion_gate=gate, keepalive_s=5.0)), [], [], []
    now = [0]
    for det in {id(d): d for d in (analyzer.detector, analyzer.track_detector)}.values():
        for name in ("detect", "detect_many"):
            real = getattr(det, name, None)
            if real is not None:  # an instance attribute on this analyzer's detector only, dropped below
                setattr(det, name, lambda *a, _real=real, **k: (detected.append(now[0]), _real(*a, **k))[1])
    try:
        for s, frames in sorted(seconds.items()):
            now[0], before = s, analyzer.looked
            r = analyzer.analyze([f for _, f in frames], [t for t, _ in frames])
            rows.append({k: r[k] for k in ("objects", "persons", "faces")})  # a box's score moves with H.264 noise
            if analyzer.looked > before:
                looked.append(s)
    finally:
        for det in (analyzer.detector, analyzer.track_detector):
            for name in ("detect", "detect_many"):
                det.__dict__.pop(name, None)
    return analyzer, rows, looked, sorted(set(detected))


def test_a_still_camera_is_looked_at_only_when_someone_walks_by(still_seconds):
    gated, gated_rows, looked, gated_detected = _run(still_seconds, 0.002)
    full, full_rows, every, full_detected = _run(still_seconds, None)
    assert every == list(range(20)) and full.skipped == 0
    assert looked[:2] == [0, WALK_S], looked  # the first second; the same picture at 5 s is not looked at again
    assert set(range(WALK_S, WALK_S + 5)) <= set(looked), looked  # each second the person is on screen
    assert max(looked) <= WALK_S + 6 and gated.skipped == 20 - len(looked), looked  # then the still photo again
    assert any(r["objects"].get("person") for r in full_rows)  # the walker is seen at all
    assert gated_rows == full_rows  # nothing the full rate finds is lost
    assert full_detected == every and gated_detected == looked  # the detector ran on exactly the looked-at seconds


def test_a_change_too_small_to_count_as_motion_is_looked_at_by_the_keepalive(still_seconds):
    """A far-off thing appearing (a 12-pixel square: 0.05% of the picture, under the 0.2% that counts as motion)
    is seen at the next keep-alive; the unchanged picture after it is not looked at again."""
    analyzer = VisualAnalyzer(VisualConfig(motion_gate=0.002, keepalive_s=5.0))
    looked = []
    for s in range(16):
        frames = [f.copy() for _, f in still_seconds[0]]
        if s >= 2:
            for f in frames:
                f[100:112, 300:312] = 255
        before = analyzer.looked
        analyzer.analyze(frames, [s + 0.0, s + 0.5])
        if analyzer.looked > before:
            looked.append(s)
    assert analyzer.gate.moved_share > 12 * 12 / (640 * 480)
    assert looked == [0, 5], looked


def test_a_batch_across_streams_skips_a_still_stream_and_reset_looks_again(still_seconds):
    analyzer = VisualAnalyzer(VisualConfig())
    frames = [[f for _, f in still_seconds[s]] for s in range(3)]
    times = [[t for t, _ in still_seconds[s]] for s in range(3)]
    assert analyzer.will_look(frames[0], times[0])  # a source's first second
    assert analyzer.will_look(frames[0], times[0])  # asked twice, measured once: the same answer
    analyzer.analyze(frames[0], times[0])
    assert not analyzer.will_look(frames[1], times[1])  # nothing moved
    analyzer.analyze(frames[1], times[1])
    analyzer.reset()  # a new source: look again
    assert analyzer.will_look(frames[2], times[2])
