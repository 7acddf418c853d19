"""A local Ray cluster listens on loopback only: nobody on the network can join it or run code on it; and it keeps
no idle worker warm (each actor has a worker of its own)."""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys

from tests.helpers.cli import ROOT

PROBE = r"""
import json, os, psutil, ray, time
from pipelines.spine.runtime import ensure_ray, shutdown_ray

ensure_ray(num_cpus=1)

@ray.remote
class Echo:
    def ping(self):
        return os.getpid()

actor = Echo.remote()
ray.get(actor.ping.remote())  # a worker process is up and serving
time.sleep(2)  # prestarted workers would be up by now
me = psutil.Process()
titles = [" ".join(p.cmdline())[:40] for p in me.children(recursive=True)]
pids = {me.pid} | {p.pid for p in me.children(recursive=True)}
listening = [(c.laddr.ip, c.laddr.port, psutil.Process(c.pid).name()) for c in psutil.net_connections("inet")
             if c.status == psutil.CONN_LISTEN and c.pid in pids]
shutdown_ray()
print(json.dumps({"listening": listening, "titles": titles}))
"""


def _is_loopback(ip: str) -> bool:
    addr = ipaddress.ip_address(ip)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return addr.is_loopback


def test_local_ray_ports_listen_on_loopback_only():
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    probe = json.loads(proc.stdout.strip().splitlines()[-1])
    listening, titles = probe["listening"], probe["titles"]
    assert any(t.startswith("ray::Echo") for t in titles), titles
    assert not [t for t in titles if t.startswith("ray::IDLE")], titles  # no worker kept warm for nothing
    names = {name for _, _, name in listening}
    assert "gcs_server" in names and "raylet" in names, listening  # the probe saw Ray's own servers
    exposed = [entry for entry in listening if not _is_loopback(entry[0])]
    assert not exposed, f"Ray ports listening beyond loopback: {exposed}"
