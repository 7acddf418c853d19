"""A local Ray cluster without its dashboard head, dashboard agent and autoscaler monitor, unless
`FORESIGHT_RAY_DASHBOARD=1`.

`ray.init(include_dashboard=False)` still starts `ray/dashboard/dashboard.py` (the usage-stats head) and the
raylet still starts `ray::DashboardAgent` (metrics export, job submission, log and state APIs): two Python
processes, about 0.18 GB resident together, that nothing here uses. Ray 2.x has no switch for them (upstream
ray-project/ray#17770 and #19420, closed without one). `lean_local_start()`, while `ray.init` starts the local
cluster and for nothing else, skips the head's start (one call in `Node.start_head_processes`) and hands the
raylet an agent command that parses to nothing, which makes it start no agent
(`NodeManager::CreateDashboardAgentManager`), after writing the agent's port files as Ray's minimal agent does.
The runtime-env agent, which `runtime_env` needs, is left as it is. Metrics collection is switched off with the
agent (`RAY_enable_metrics_collection=0`), so no Ray process keeps trying to reach the agent's metrics port. If
a Ray version lacks what this relies on, the agent starts as before. The autoscaler monitor (`monitor.py`,
about 80 MB) scales a cluster that a single local node never grows; it is not started either (Ray's own
`no_monitor`, which `ray.init` does not expose), so `ray status` has nothing to report without the opt-in. Nor
is the log monitor (about 78 MB), which tails the workers' log files for drivers that want them: `ensure_ray`
starts Ray with `log_to_driver=False`, and the files stay in the session's log folder.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

DASHBOARD_ENV = "FORESIGHT_RAY_DASHBOARD"
_AGENT_FLAG = "--dashboard_agent_command="


def dashboard_wanted() -> bool:
    """True when the operator asked for Ray's dashboard (head and agent) with FORESIGHT_RAY_DASHBOARD=1."""
    return os.environ.get(DASHBOARD_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def _persist_absent_agent_ports(raylet_command: list[str]) -> bool:
    """Write the agent's three ports as -1 ("not in use"), as Ray's minimal agent does: the raylet waits for
    these files (`WaitForDashboardAgentPorts`) before it registers the node. False when this Ray has no such."""
    try:
        from ray._raylet import (
            DASHBOARD_AGENT_LISTEN_PORT_NAME,
            METRICS_AGENT_PORT_NAME,
            METRICS_EXPORT_PORT_NAME,
            persist_port,
        )
    except ImportError:
        return False
    flags = dict(arg[2:].split("=", 1) for arg in raylet_command if arg.startswith("--") and "=" in arg)
    if not (flags.get("session_dir") and flags.get("node_id")):
        return False
    for name in (METRICS_AGENT_PORT_NAME, METRICS_EXPORT_PORT_NAME, DASHBOARD_AGENT_LISTEN_PORT_NAME):
        persist_port(flags["session_dir"], flags["node_id"], name, -1)
    return True


@contextlib.contextmanager
def lean_local_start() -> Iterator[None]:
    """While a local cluster starts: no dashboard head, and a raylet told to start no dashboard agent."""
    from ray._private import node, ray_constants, services

    os.environ.setdefault("RAY_enable_metrics_collection", "0")  # read by GCS, the raylet and workers at start
    start_api_server, start_ray_process = services.start_api_server, services.start_ray_process

    def no_api_server(*args, **kwargs):  # what start_api_server returns for "no dashboard URL, no process"
        return "", None

    def start_without_agent(command, process_type, *args, **kwargs):
        if process_type == ray_constants.PROCESS_TYPE_RAYLET and _persist_absent_agent_ports(command):
            # main.cc refuses an empty flag; one blank parses to no command, and then no agent is started.
            command = [_AGENT_FLAG + " " if arg.startswith(_AGENT_FLAG) else arg for arg in command]
        return start_ray_process(command, process_type, *args, **kwargs)

    def start_head_without_monitor(self, *args, **kwargs):
        self._ray_params.no_monitor = True  # what `ray start --no-monitor` sets
        self._ray_params.include_log_monitor = False  # it forwards worker logs to a driver; ours asks for none
        return start_head_processes(self, *args, **kwargs)

    start_head_processes = node.Node.start_head_processes
    services.start_api_server, services.start_ray_process = no_api_server, start_without_agent
    node.Node.start_head_processes = start_head_without_monitor
    try:
        yield
    finally:
        services.start_api_server, services.start_ray_process = start_api_server, start_ray_process
        node.Node.start_head_processes = start_head_processes
