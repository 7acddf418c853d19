"""Many streams on one set of stage hosts: no state leaks between concurrent streams, a source that fails
ends only its own stream, each stream has one process of its own, and removing a stream frees its state and
its process and nothing else."""

from __future__ import annotations

import gc
import json
import time

import numpy as np
import psutil
import pytest
import ray

from models.errors import BadInput
from pipelines import AnalyzeOptions, Pipeline
from tests.helpers.web import serve_files
from training.media.synth import RATE, ClipSpec, place, sample_image, sound, speak, tone, write_clip

pytestmark = pytest.mark.slow

SECONDS = 5.0


def clip(path, picture: str | None, audio: np.ndarray) -> None:
    image = sample_image(picture)[:240, :320] if picture else np.full((240, 320, 3), 20, np.uint8)
    image = np.ascontiguousarray(np.pad(image, ((0, 240 - image.shape[0]), (0, 320 - image.shape[1]), (0, 0))))
    write_clip(path, ClipSpec(SECONDS, 10.0, 320, 240, lambda t: image, audio))


@pytest.fixture(scope="module")
def loopback_clips(tmp_path_factory):
    """Three clips with different sights and sounds, served over HTTP on loopback."""
    root = tmp_path_factory.mktemp("streams")
    speech, ring, beeps = (np.zeros(int(SECONDS * RATE), np.float32) for _ in range(3))
    place(speech, speak("Please check the front door."), 0.5, gain=0.9)
    place(ring, sound("phone-incoming-call")[: 3 * RATE], 1.0, gain=0.8)
    for at in (1.0, 2.5, 4.0):
        place(beeps, tone(1000.0, 0.3), at)
    clip(root / "speech.mp4", "astronaut", speech)
    clip(root / "ring.mp4", "coffee", ring)
    clip(root / "beeps.mp4", None, beeps)
    (root / "broken.mp4").write_bytes(np.random.default_rng(0).bytes(50_000))
    server = serve_files(root)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    yield [f"{base}/{name}.mp4" for name in ("speech", "ring", "beeps", "broken")]
    server.shutdown()


def stream_processes() -> set[int]:
    """This driver's Ray actor processes other than the shared stage hosts (and Ray's own agents and idle
    workers): the processes that streams hold."""
    out = set()
    for proc in psutil.Process().children(recursive=True):
        try:
            name = proc.name()
        except psutil.Error:
            continue
        kind = name.split(".")[0]
        if name.startswith("ray::") and kind not in ("ray::IDLE", "ray::StageHost") and not kind.endswith("Agent"):
            out.add(proc.pid)
    return out


def settle(done, timeout_s: float = 30.0) -> None:
    """Wait for a killed actor's process to exit: Ray reaps it asynchronously, so the count is checked after."""
    deadline = time.monotonic() + timeout_s
    while not done() and time.monotonic() < deadline:
        time.sleep(0.2)


def comparable(result: dict) -> str:
    return json.dumps({k: v for k, v in result.items() if k != "timings"}, sort_keys=True)


def test_concurrent_streams_equal_each_stream_alone_and_close_frees_only_their_state(loopback_clips, ray_runtime):
    *urls, broken_url = loopback_clips
    options = AnalyzeOptions()
    pipes = [Pipeline(url, options) for url in urls]  # all three at once, on the same hosts
    broken = Pipeline(broken_url, options, source_checked=True)  # and a source that fails once it is read
    try:
        with pytest.raises(BadInput):
            broken.wait()
        broken.close()
        hosts = pipes[0].actors
        assert all(p.actors[name] == hosts[name] for p in pipes for name in hosts)
        pids = ray.get([h.pid.remote() for h in hosts.values()])
        held = ray.get(hosts["speech"].streams.remote())
        assert {p.stream for p in pipes} <= set(held)
        own = ray.get([p.ingest.pid.remote() for p in pipes])
        settle(lambda: stream_processes() == set(own))  # the broken stream's process exits once Ray reaps it
        assert stream_processes() == set(own)  # one process per stream (its reader and sink), no other
        together = [p.wait() for p in pipes]
        pipes[0].close()  # removing one stream frees its state in every host, and only its state
        for name, host in hosts.items():
            held = set(ray.get(host.streams.remote()))
            assert pipes[0].stream not in held and {pipes[1].stream, pipes[2].stream} <= held, name
        settle(lambda: own[0] not in stream_processes())
        assert stream_processes() == set(own[1:])  # and its process, only its
    finally:
        for p in [*pipes, broken]:
            p.close()
    assert ray.get([h.pid.remote() for h in hosts.values()]) == pids  # one process per stage, models loaded once
    for name, host in hosts.items():
        assert not {p.stream for p in [*pipes, broken]} & set(ray.get(host.streams.remote())), name
    names = list(hosts)
    del hosts, pipes, broken  # no pipeline refers to the hosts now: they stay for the next streams all the same
    gc.collect()

    alone = []
    for url in urls:
        pipe = Pipeline(url, options)
        try:
            assert ray.get([pipe.actors[name].pid.remote() for name in names]) == pids
            alone.append(pipe.wait())
        finally:
            pipe.close()

    speech, ring, beeps = together
    assert "front door" in " ".join(t["text"] for t in speech["transcript"]).lower()
    assert not ring["transcript"] and not beeps["transcript"]
    assert all(r["ingest"]["segments_emitted"] == SECONDS for r in together)
    for shared, own in zip(together, alone, strict=True):
        assert comparable(shared) == comparable(own)
