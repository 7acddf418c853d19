"""A local cluster from `ensure_ray` starts no Ray dashboard head or agent, nor the autoscaler or log monitor,
unless FORESIGHT_RAY_DASHBOARD=1, and runtime_env (its own agent) still works either way. Each case is a fresh
interpreter with a real local Ray."""

from __future__ import annotations

import pytest

from benchmarks import ray_processes


def probe(opt_in: bool) -> dict:
    """The benchmark's probe (a fresh interpreter's local Ray); `procs` as "name command line" strings."""
    found = ray_processes.probe(opt_in)
    return {**found, "procs": [f"{p['name']} {p['cmd']}" for p in found["procs"]]}


def dashboard_processes(procs: list[str]) -> list[str]:
    """The dashboard head and agent, the autoscaler monitor and the log monitor."""
    return [p for p in procs if "DashboardAgent" in p or "dashboard/agent.py" in p or "dashboard/dashboard.py" in p
            or "autoscaler/_private/monitor.py" in p or "autoscaler/v2/monitor.py" in p or "log_monitor.py" in p]


@pytest.mark.parametrize("opt_in", [False, True], ids=["default", "FORESIGHT_RAY_DASHBOARD=1"])
def test_dashboard_head_and_agent_only_when_asked_for(opt_in):
    found = probe(opt_in)
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
