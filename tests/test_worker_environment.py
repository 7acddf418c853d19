"""Which settings travel to a Ray cluster's workers (`pipelines/spine/runtime.py: worker_environment`).

A cluster named by RAY_ADDRESS starts its workers with its own environment, so the driver sends the settings
that stage code reads there; `tests/test_ray_cluster.py` checks that a real second node sees them. Here: every
FORESIGHT_* name the worker-side code reads is either sent or named as the machine's own, so a new setting
cannot be forgotten.
"""

from __future__ import annotations

import re

from pipelines.spine.runtime import WORKER_SETTINGS, worker_environment
from tests.helpers.cli import ROOT

# Read by worker-side code but each machine's own: paths that need not exist on a worker, and a secret.
MACHINE_OWN = {"FORESIGHT_CACHE", "FORESIGHT_PASBENCH_DIR", "FORESIGHT_JUDGE_API_KEY"}
WORKER_SIDE = ("models", "pipelines/stages", "pipelines/media", "pipelines/sinks")


def worker_side_names() -> set[str]:
    names = set()
    for folder in WORKER_SIDE:
        for path in (ROOT / folder).rglob("*.py"):
            names |= set(re.findall(r"[\"'](FORESIGHT_[A-Z_]+)[\"']", path.read_text()))
    return names


def test_every_setting_read_in_a_worker_is_sent_or_named_as_the_machines_own():
    names = worker_side_names()
    assert "FORESIGHT_WHISPER_NICE" in names and "FORESIGHT_CACHE" in names  # the scan finds what it should
    assert names - set(WORKER_SETTINGS) - MACHINE_OWN == set()
    assert not set(WORKER_SETTINGS) & MACHINE_OWN


def test_only_the_settings_the_driver_has_set_are_sent(monkeypatch):
    for name in WORKER_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FORESIGHT_YAMNET", "w8a8")
    monkeypatch.setenv("FORESIGHT_THREADS", "3")
    monkeypatch.setenv("FORESIGHT_CACHE", "/somewhere")
    monkeypatch.setenv("FORESIGHT_JUDGE_API_KEY", "secret")
    env = worker_environment()
    assert env["FORESIGHT_YAMNET"] == "w8a8" and env["FORESIGHT_THREADS"] == "3" and env["OMP_NUM_THREADS"] == "3"
    assert "FORESIGHT_PREFM" not in env and "FORESIGHT_CACHE" not in env and "FORESIGHT_JUDGE_API_KEY" not in env
