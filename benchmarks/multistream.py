"""Many live cameras on one machine: N loopback RTSP streams (720p30) through one set of shared stage hosts.

First one stream runs alone for `--seconds` (its resident size is `rss_gb_one_stream`), then N streams run
together for `--seconds` on the same hosts. Memory is the resident size of every process of the pipeline (the
driver's Ray processes: GCS, raylet, stage hosts, ingest and sink actors; the RTSP servers are not counted),
sampled every 2 s. The last line is JSON:

- `streams`; `p95_s`: the worst stream's p95 latency (segment complete -> its record in the sink);
- `dropped_segments`: summed over the N streams (a slow stream drops its own oldest seconds);
- `rss_gb`: the peak while N streams run; `rss_gb_one_stream`: the peak of the one-stream run before;
- `rss_growth`: mean resident size over the last third of the N-stream run / over its first third;
- `p95_s_one_stream`: the p95 latency of the one-stream run;
- `cpu_cores_per_stream` (and `..._one_stream`): CPU seconds of every pipeline process (this driver and its Ray
  processes) / wall seconds / streams, over the N-stream (one-stream) run; a warm-up stream loads the models
  first, so start-up is not in it. The sampler's own reading of /proc (every 2 s, each process's threads; it runs
  in this driver) is the instrument's cost, not the pipeline's: it is printed apart and left out of the totals.

`--scene moving` (default) is the long benchmark clip (pictures panning all the time, speech and sounds);
`--scene static` is a still camera (a real photo) that a person crosses once a minute, in silence
(`training/perception/static_scene.py`): what the motion gate is for.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import ray

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._media import long_clip  # noqa: E402
from models.encoders.detectors import DEFAULT_DETECTOR, DETECTOR_NAMES  # noqa: E402
from pipelines import AnalyzeOptions, Pipeline, StageConfig  # noqa: E402
from pipelines.spine.budget import LatencyBudget  # noqa: E402
from pipelines.spine.runtime import ensure_ray  # noqa: E402
from training.media.loopback import RtspServer  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
NOT_PIPELINE = {"ffmpeg", "rtsp-server-perl", "rtsp-server-per", "perl"}  # (names are cut at 15 characters)


def resident_split(pid: int) -> dict[str, float]:
    """GB of a process's resident size that is its own (anonymous), mapped files (libraries) and shared memory
    (Ray's object store), from /proc/<pid>/status."""
    fields = {"RssAnon:": "anon", "RssFile:": "file", "RssShmem:": "shmem"}
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, *rest = line.split()
            if key in fields:
                out[fields[key]] = int(rest[0]) * 1024 / 1e9
    return out


def pipeline_rss(by_pid: dict[int, float] | None = None) -> tuple[float, dict[str, dict[str, float]]]:
    """GB resident in this driver's Ray processes (its descendants, less the RTSP servers), and by process kind
    (its total, count of processes and resident split); `by_pid` gets each process's own."""
    parts: dict[str, dict[str, float]] = {}
    for proc in psutil.Process().children(recursive=True):
        try:
            name = proc.name()
            if name not in NOT_PIPELINE:
                kind = name.split(".")[0] if name.startswith("ray::") else name
                part = parts.setdefault(kind, {"rss": 0.0, "n": 0})
                rss = proc.memory_info().rss / 1e9
                part["rss"] += rss
                if by_pid is not None:
                    by_pid[proc.pid] = rss
                part["n"] += 1
                for key, gb in resident_split(proc.pid).items():
                    part[key] = part.get(key, 0.0) + gb
        except (psutil.Error, OSError):
            pass
    return sum(p["rss"] for p in parts.values()), parts


def thread_cpu(pid: int) -> dict[int, tuple[str, float]]:
    """Each thread of a process: its name and CPU seconds so far, from /proc/<pid>/task (what a process's share
    is made of: FFmpeg's decoding threads, Python's, Ray's)."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        out[int(tid)] = (stat[stat.index("(") + 1:stat.rindex(")")], (int(fields[11]) + int(fields[12])) / CLOCK_TICKS)
    return out


class Sampler:
    """Samples `pipeline_rss()` every `every_s` seconds on a thread until stopped; keeps the peak's breakdown,
    and each stage host's size at that peak (`hosts`: pid -> node name, once known)."""

    def __init__(self, every_s: float = 2.0):
        self.samples: list[float] = []
        self.peak: dict[str, dict[str, float]] = {}
        self.hosts: dict[int, str] = {}
        self.peak_hosts: dict[int, float] = {}
        self.cpu_first: dict[int, float] = {}  # pid -> CPU seconds when first seen, and when last seen
        self.cpu_last: dict[int, float] = {}
        self.names: dict[int, str] = {}  # pid -> process name
        self.threads: dict[tuple[int, int], list] = {}  # (pid, tid) -> [thread name, CPU s first seen, last seen]
        self.own_s = 0.0  # CPU seconds this sampler spent reading /proc: the instrument's, not the pipeline's
        self._tid: int | None = None  # the sampling thread (in the driver's process)
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(every_s,), daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        t0 = time.thread_time()
        try:
            self._read()
        finally:
            self.own_s += time.thread_time() - t0

    def _read(self) -> None:
        by_pid: dict[int, float] = {}
        total, parts = pipeline_rss(by_pid)
        for proc in [psutil.Process(), *(psutil.Process(pid) for pid in by_pid if psutil.pid_exists(pid))]:
            try:
                cpu = sum(proc.cpu_times()[:2])
            except psutil.Error:
                continue
            self.cpu_first.setdefault(proc.pid, cpu)
            self.cpu_last[proc.pid] = cpu
            try:  # its latest name: a Ray worker starts as "python" and takes its actor's name a moment later
                name = proc.name()
            except psutil.Error:
                name = "?"
            if not self.names.get(proc.pid, "").startswith(name):  # an exiting one reads as its first 15 chars
                self.names[proc.pid] = name
            for tid, (thread, seconds) in thread_cpu(proc.pid).items():
                self.threads.setdefault((proc.pid, tid), [thread, seconds, seconds])[2] = seconds
        if not self.samples or total > max(self.samples):
            self.peak, self.peak_hosts = parts, by_pid
        self.samples.append(total)

    def _run(self, every_s: float) -> None:
        self._tid = threading.get_native_id()
        while not self._stop.wait(every_s):
            self._sample()

    def cpu_cores(self) -> float:
        """CPU seconds of the pipeline's processes since the sampler started, per wall second (less the sampler's
        own reading of /proc, which runs in the driver's process)."""
        spent = sum(self.cpu_last[p] - self.cpu_first[p] for p in self.cpu_last) - self.own_s
        return spent / (time.monotonic() - self.started)

    def stop(self) -> list[float]:
        self._stop.set()
        self._thread.join()
        self._sample()
        self.cores = self.cpu_cores()
        wall = time.monotonic() - self.started
        cores = {}
        for pid in self.cpu_last:
            name = self.hosts.get(pid) or self.names.get(pid, "?")
            own = self.own_s if pid == os.getpid() else 0.0
            cores[name] = cores.get(name, 0.0) + (self.cpu_last[pid] - self.cpu_first[pid] - own) / wall
        print(f"the sampler's own reading of /proc (not counted above or in the totals): {self.own_s / wall:.3f} cores")
        print("CPU cores by process: " + ", ".join(f"{k} {v:.3f}" for k, v in sorted(cores.items(), key=lambda kv: -kv[1])
                                                 if v >= 0.001))
        by_thread: dict[str, float] = {}
        for (pid, tid), (thread, first, last) in self.threads.items():
            if tid == self._tid:
                continue
            key = f"{self.hosts.get(pid) or self.names.get(pid, '?')}/{thread}"
            by_thread[key] = by_thread.get(key, 0.0) + (last - first) / wall
        print("CPU cores by thread (process/thread, the 12 largest): " + ", ".join(
            f"{k} {v:.3f}" for k, v in sorted(by_thread.items(), key=lambda kv: -kv[1])[:12]))
        print("peak by process kind (GB; processes, resident anonymous/files/shared memory): " + ", ".join(
            f"{k} {v['rss']:.2f} ({v['n']:.0f}: {v.get('anon', 0):.2f}/{v.get('file', 0):.2f}/{v.get('shmem', 0):.2f})"
            for k, v in sorted(self.peak.items(), key=lambda kv: -kv[1]["rss"])))
        print("stage hosts at the peak (GB): " + ", ".join(f"{name} {self.peak_hosts.get(pid, 0.0):.2f}"
                                                          for pid, name in self.hosts.items()))
        return self.samples


def cross_stream_batches() -> list[int]:
    """The sizes of the detector batches the shared visual host ran across streams (empty without one)."""
    import ray

    from pipelines.spine.hosts import HOST_PREFIX

    try:
        return ray.get(ray.get_actor(HOST_PREFIX + "visual").batches.remote("visual"), timeout=30)
    except (ValueError, ray.exceptions.RayError):
        return []


def run(urls: list[str], options: AnalyzeOptions) -> tuple[list[dict], list[list[float]], Sampler]:
    """Run one pipeline per URL together; their results, latencies, and the sampler (memory, CPU) meanwhile."""
    sampler = Sampler()
    sampler._sample()  # every process's CPU time from now on
    pipes = [Pipeline(url, options) for url in urls]
    hosts = pipes[0].actors
    for pid, name in zip(ray.get([h.pid.remote() for h in hosts.values()]), hosts, strict=True):
        sampler.hosts[pid] = f"{sampler.hosts[pid]}+{name}" if pid in sampler.hosts else name
    try:
        results = [p.wait() for p in pipes]
        latencies = [p.latencies() for p in pipes]
        for p, result in zip(pipes, results, strict=True):
            result["transcript_delay_s"] = transcript_delays(p.feed())
    finally:
        for p in pipes:
            p.close()
    sampler.stop()
    return results, latencies, sampler


def transcript_delays(feed: list) -> list[float]:
    """Seconds of stream time from each transcript line's end to the second that brought it to the sink (a live
    source transcribes behind the seconds: `graph.node_config`; the final record's lines count to the stream's end)."""
    return [round(float(item["time"]) - float(line["end"]), 2) for _, item in feed for line in item["transcript"]]


def slow_seconds(latencies: list[float], result: dict, over_s: float = 1.0) -> str:
    """Which seconds of a stream came back later than `over_s`, beside where its transcript lines end: what
    a p95 over target is made of (Whisper runs when an utterance ends, and the seconds behind it wait)."""
    slow = [i for i, lat in enumerate(latencies) if lat > over_s]
    ends = [round(float(t["end"]), 1) for t in result.get("transcript", [])]
    return (f"seconds over {over_s:g} s: {len(slow)} of {len(latencies)} {slow[:60]}; "
            f"transcript lines end at {ends[:60]}")


def scene_clip(scene: str) -> Path:
    """The looped clip each camera serves: the moving benchmark clip, or the static scene (built once)."""
    if scene == "moving":
        return long_clip(1.0)
    from training.perception.static_scene import write_static_scene

    path = Path(__file__).resolve().parents[1] / "data" / "bench" / "static_1min_720p30.mp4"
    if not path.exists():
        write_static_scene(path, 60.0, walk_every_s=60.0, first_walk_s=20.0)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--streams", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=300.0)
    ap.add_argument("--no-visual", action="store_true", help="speech and sound tags only")
    ap.add_argument("--scene", choices=["moving", "static"], default="moving",
                    help="moving: the benchmark clip; static: a still camera a person crosses once a minute")
    ap.add_argument("--motion-gate", type=float, default=StageConfig.motion_gate,
                    help="the visual stage's motion gate (0: the models look at every second)")
    ap.add_argument("--warmup", type=float, default=15.0, help="seconds of one stream first, to load the models")
    ap.add_argument("--latency-budget", type=float, metavar="SECONDS",
                    help="each stream's budget controller lowers its frame rate, then drops its visual tier, to keep "
                         "this mean latency (the stated degradation; its decisions are printed per stream)")
    ap.add_argument("--track", action="store_true",
                    help="track objects (the tracking defaults, a counting line across the middle; docs/tracking.md)")
    ap.add_argument("--detector", choices=DETECTOR_NAMES, default=DEFAULT_DETECTOR,
                    help=f"the object detector (default {DEFAULT_DETECTOR}; docs/perception.md)")
    args = ap.parse_args()
    if args.streams < 1 or args.seconds < 5:
        ap.error("--streams must be at least 1 and --seconds at least 5")
    budget = LatencyBudget(latency_s=args.latency_budget) if args.latency_budget else None
    stages = StageConfig(visual=not args.no_visual, motion_gate=args.motion_gate or None, detector=args.detector)
    options = AnalyzeOptions(stages=stages, duration_s=args.seconds, rtsp_transport="udp", budget=budget)
    if args.track:
        from app.services.track_settings import enable_tracking
        from models.zones import parse_layout

        enable_tracking(options, *parse_layout(None, ["middle=0.5,0,0.5,1"]))
        stages = options.stages
    clip = scene_clip(args.scene)
    servers = [RtspServer(clip) for _ in range(args.streams)]
    for server in servers:
        server.start()
    ensure_ray()
    try:
        if args.warmup > 0:
            warm = dataclasses.replace(options, duration_s=args.warmup)
            run([servers[0].url], warm)
        alone, alone_latencies, one_run = run([servers[0].url], options)
        results, latencies, many_run = run([s.url for s in servers], options)
    finally:
        for server in servers:
            server.kill()
    one, samples = one_run.samples, many_run.samples
    third = max(1, len(samples) // 3)
    p95 = [float(np.percentile(lat, 95)) if lat else float("nan") for lat in latencies]
    dropped = [int(r["ingest"]["segments_dropped"]) for r in results]
    for i, (r, p, d) in enumerate(zip(results, p95, dropped, strict=True)):
        decisions = (r.get("timings", {}).get("budget") or r.get("budget") or {}).get("decisions")
        print(f"stream {i}: {r['ingest']['segments_emitted']} segments, p95 {p:.3f} s, dropped {d}"
              + (f", degradation {decisions}" if decisions else ""))
        print(f"  {slow_seconds(latencies[i], r)}")
        print(f"  transcript lines reached the sink {sorted(r['transcript_delay_s'])} s after they ended")
    p95_one = float(np.percentile(alone_latencies[0], 95)) if alone_latencies[0] else float("nan")
    print(f"one stream alone: {alone[0]['ingest']['segments_emitted']} segments, p95 {p95_one:.3f} s, "
          f"dropped {alone[0]['ingest']['segments_dropped']}")
    batches = cross_stream_batches()
    if batches:
        print(f"visual host: {len(batches)} cross-stream detector batches, {sum(batches)} key frames in them "
              f"(sizes {min(batches)}-{max(batches)})")
    load = os.getloadavg()[0]
    print(f"{args.streams} streams x {args.seconds:g} s, {args.scene} scene{' (no visual)' if args.no_visual else ''}: "
          f"peak RSS {max(samples):.2f} GB vs {max(one):.2f} GB with one stream; CPU {many_run.cores:.2f} cores "
          f"vs {one_run.cores:.2f} with one stream; load average {load:.1f}")
    print(json.dumps({"streams": args.streams, "p95_s": round(max(p95), 3), "dropped_segments": sum(dropped),
                      "rss_gb": round(max(samples), 2), "rss_gb_one_stream": round(max(one), 2),
                      "p95_s_one_stream": round(p95_one, 3), "scene": args.scene,
                      "motion_gate": args.motion_gate, "track": args.track, "detector": args.detector,
                      "track_fps": options.stages.track_fps if args.track else None,
                      "cpu_cores_per_stream": round(many_run.cores / args.streams, 3),
                      "transcript_delay_s_max": max((d for r in results for d in r["transcript_delay_s"]), default=None),
                      "cpu_cores_per_stream_one_stream": round(one_run.cores, 3),
                      "rss_growth": round(float(np.mean(samples[-third:]) / np.mean(samples[:third])), 3)}))


if __name__ == "__main__":
    main()
