"""`foresight batch` on a real two-node Ray cluster (issue 13 §4): a head and a second node on this machine,
both on loopback, each with one CPU, so two files at a time must run on different nodes.

Multi-node use, in short (the lead folds this into docs/deploy.md):

- Every node needs the same installation as the driver: this repository (on `PYTHONPATH`, or installed) and
  its `.venv` packages (torch, onnxruntime, faster-whisper, PyAV, Ray of the same version), plus the
  Debian packages `scripts/bootstrap.sh` installs (ffmpeg libraries, espeak-ng only for building media).
  The models ship inside those packages; nothing is downloaded.
- Start the head with `ray start --head --port=6379 --num-cpus=N` and each worker with
  `ray start --address=HEAD:6379 --num-cpus=N` (or the Ray cluster launcher / KubeRay with the same image),
  then run `RAY_ADDRESS=HEAD:6379 foresight batch videos/ --out results/` on the head. Every worker must see
  the input files and OUTDIR at the same paths (a shared file system); results are written by the driver.
- Each file's result records the Ray node that analyzed it in `timings.node_id`.
- Beyond one machine, use Ray's token authentication (docs/deploy.md); this test keeps every port on
  127.0.0.1 (`--node-ip-address=127.0.0.1`, and the head with `RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`).

The test stops only the processes it started (their process trees), never `ray stop`, which would end
every Ray on the machine.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from tests.helpers.cli import ROOT, free_port, run_cli
from training.media.synth import flash_tone_clip

pytestmark = pytest.mark.slow
# `ray start` for a worker node on loopback. Ray refuses to start a worker node while multi-node clusters are
# off (`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`), and with them on it rewrites a 127.0.0.1 head address into the
# machine's network address, where the loopback-only head does not listen. So: clusters on, no rewrite.
RAY_START = """
import sys
from ray._private import ray_constants, services
from ray.scripts.scripts import main
if "--head" not in sys.argv:
    ray_constants.ENABLE_RAY_CLUSTER = True
    services.resolve_ip_for_localhost = lambda host: host
sys.argv = ["ray", *sys.argv[1:]]
main()
"""


# What the probing driver sets: three stage settings that travel to the workers, a path and a secret that do not.
DRIVER_SETTINGS = {"FORESIGHT_WHISPER_NICE": "7", "FORESIGHT_PREFM": "torch", "FORESIGHT_THREADS": "2",
                   "FORESIGHT_CACHE": "/driver-only/cache", "FORESIGHT_JUDGE_API_KEY": "driver-secret"}
TRAVEL = ("FORESIGHT_WHISPER_NICE", "FORESIGHT_PREFM", "FORESIGHT_THREADS")
PROBED = (*DRIVER_SETTINGS, "OMP_NUM_THREADS")  # the numeric libraries' count follows FORESIGHT_THREADS
# A driver joining the cluster as Foresight does, asking a task on the second node what its environment holds of
# the names given as arguments.
WORKER_ENV_PROBE = """
import json, os, sys, ray
from pipelines.spine.runtime import ensure_ray
ensure_ray()
names = sys.argv[1:]
probe = ray.remote(num_cpus=0, resources={"second": 0.01})(lambda: {n: os.environ.get(n) for n in names})
print(json.dumps(ray.get(probe.remote(), timeout=240)))
"""


class Node:
    """`ray start --block` in its own session: stopping it ends the Ray processes it started, and whatever of
    its process tree is left is killed by PID."""

    def __init__(self, args: list[str], env: dict, log: Path):
        self.log = open(log, "w")
        self.proc = subprocess.Popen([sys.executable, "-c", RAY_START, "start", "--block", *args], env=env,
                                     stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def tree(self) -> list[psutil.Process]:
        try:
            root = psutil.Process(self.proc.pid)
            return [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def stop(self) -> None:
        procs = self.tree()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        _, alive = psutil.wait_procs(procs, timeout=20)
        for p in alive:
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
        self.log.close()


def loopback(ip: str) -> bool:
    addr = ipaddress.ip_address(ip.split("%")[0])
    return addr.is_loopback or bool(getattr(addr, "ipv4_mapped", None) and addr.ipv4_mapped.is_loopback)


def wait_nodes(env: dict, count: int, timeout: float = 180) -> None:
    script = (f"import ray, time; ray.init(address='{env['RAY_ADDRESS']}', logging_level='ERROR', "
              "log_to_driver=False); "
              f"d = time.time() + {timeout}\n"
              f"while len([n for n in ray.nodes() if n['Alive']]) < {count} and time.time() < d: time.sleep(1)\n"
              "print(len([n for n in ray.nodes() if n['Alive']]))")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         timeout=timeout + 60)
    assert out.stdout.strip().endswith(str(count)), out.stdout + out.stderr[-2000:]


def test_batch_runs_on_both_nodes_of_a_real_cluster(tmp_path):
    port = free_port()
    temp = Path(tempfile.mkdtemp(prefix="fsray", dir="/tmp"))  # short: Ray's socket paths have a length limit
    base = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "disabled", "RAY_DEDUP_LOGS": "0",
            "RAY_ADDRESS": f"127.0.0.1:{port}", "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO": "0",
            "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}  # head and drivers: this node's address is 127.0.0.1
    head_env = dict(base)
    head_env.pop("RAY_ADDRESS")
    worker_env = dict(base)
    for env in (head_env, worker_env):  # the nodes start without the settings the driver sends below (their cache
        for name in PROBED:  # path stays their own)
            if name != "FORESIGHT_CACHE":
                env.pop(name, None)
    nodes = [Node(["--head", f"--port={port}", "--node-ip-address=127.0.0.1", "--num-cpus=1",
                   "--include-dashboard=false", f"--temp-dir={temp}", "--disable-usage-stats"], head_env,
                  tmp_path / "head.log")]
    try:
        time.sleep(3)
        nodes.append(Node([f"--address=127.0.0.1:{port}", "--node-ip-address=127.0.0.1", "--num-cpus=1",
                           '--resources={"second": 1}', "--disable-usage-stats"], worker_env,
                          tmp_path / "worker.log"))
        wait_nodes(base, 2)
        for node in nodes:  # nothing the test started listens beyond loopback
            for p in node.tree():
                try:
                    conns = p.net_connections("inet")
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
                wide = [c.laddr for c in conns if c.status == psutil.CONN_LISTEN and not loopback(c.laddr.ip)]
                assert not wide, (p.name(), wide)

        folder = tmp_path / "clips"
        folder.mkdir()
        for i in range(4):
            flash_tone_clip(folder / f"clip{i}.mp4", duration_s=3.0 + i, event_s=(1.0, 2.0))
        out = tmp_path / "out"
        proc = run_cli("batch", str(folder), "--out", str(out), "--no-asr", "--no-visual", "--no-safety",
                       "--events", "tags", "-q", timeout=900, env=base)
        assert proc.returncode == 0, proc.stderr[-3000:]
        results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
        assert len(results) == 4
        used = {r["timings"]["node_id"] for r in results}
        assert len(used) == 2, used  # both nodes analyzed files

        # The driver's stage settings reach the cluster's workers, which were started without them; its paths
        # and secrets do not (pipelines/spine/runtime.py: worker_environment).
        seen = subprocess.run([sys.executable, "-c", WORKER_ENV_PROBE, *PROBED], env={**base, **DRIVER_SETTINGS},
                              capture_output=True, text=True, timeout=300)
        assert seen.returncode == 0, seen.stderr[-3000:]
        found = json.loads(seen.stdout.strip().splitlines()[-1])
        assert {n: found[n] for n in TRAVEL} == {n: DRIVER_SETTINGS[n] for n in TRAVEL}, found
        assert found["OMP_NUM_THREADS"] == DRIVER_SETTINGS["FORESIGHT_THREADS"], found
        assert found["FORESIGHT_CACHE"] != DRIVER_SETTINGS["FORESIGHT_CACHE"], found
        assert found["FORESIGHT_JUDGE_API_KEY"] is None, found
    finally:
        for node in reversed(nodes):
            node.stop()
        shutil.rmtree(temp, ignore_errors=True)
