"""A local cluster from `ensure_ray` starts no Ray dashboard head or agent, nor the autoscaler or log monitor,
unless FORESIGHT_RAY_DASHBOARD=1, and runtime_env (its own agent) still works either way. Each case is a fresh
interpreter with a real local Ray."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers.cli import ROOT

PROBE = r"""
import json, os, psutil, ray
from pipelines.spine.runtime import ensure_ray
ensure_ray(num_cpus=1)

@ray.remote
def env():
    return os.environ.get("PROBE_VALUE"), os.environ.get("OMP_NUM_THREADS")

assert ray.get(ray.remote(lambda: 41).remote()) == 41
seen = ray.get(env.options(runtime_env={"env_vars": {"PROBE_VALUE": "set by runtime_env"}}).remote())
procs = []
for p in psutil.Process().children(recursive=True):
    try:
        procs.append(p.name() + " " + " ".join(p.cmdline()))
    except psutil.Error:
        pass
print(json.dumps({"runtime_env": seen, "procs": procs}))
ray.shutdown()
"""


def probe(**env: str) -> dict:
    run_env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "FORESIGHT_RAY_DASHBOARD")}
    run_env.update(PYTHONPATH=str(ROOT), **env)
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=run_env, capture_output=True, text=True,
                         timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def dashboard_processes(procs: list[str]) -> list[str]:
    """The dashboard head and agent, the autoscaler monitor and the log monitor."""
    return [p for p in procs if "DashboardAgent" in p or "dashboard/agent.py" in p or "dashboard/dashboard.py" in p
            or "autoscaler/_private/monitor.py" in p or "autoscaler/v2/monitor.py" in p or "log_monitor.py" in p]


@pytest.mark.parametrize("opt_in", [False, True], ids=["default", "FORESIGHT_RAY_DASHBOARD=1"])
def test_dashboard_head_and_agent_only_when_asked_for(opt_in):
    found = probe(**({"FORESIGHT_RAY_DASHBOARD": "1"} if opt_in else {}))
    assert found["runtime_env"] == ["set by runtime_env", "1"]  # the runtime-env agent runs in both
    assert any("RuntimeEnvAgent" in p for p in found["procs"]), found["procs"]
    assert any(p.startswith("raylet") for p in found["procs"]), found["procs"]
    dashboard = dashboard_processes(found["procs"])
    if opt_in:
        assert any("DashboardAgent" in p for p in dashboard), found["procs"]
        assert any("dashboard/dashboard.py" in p for p in dashboard), found["procs"]
        assert any("autoscaler" in p and "monitor.py" in p for p in dashboard), found["procs"]
        assert any("log_monitor.py" in p for p in dashboard), found["procs"]
    else:
        assert dashboard == [], dashboard
