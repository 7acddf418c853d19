"""The shared stage hosts live as long as their driver: a server keeps them after its live streams end. They
must not hold the logical CPUs that the server's upload jobs and `foresight batch` ask for (one each), or an
upload after a live stream would be accepted and never run."""

from __future__ import annotations


def test_one_cpu_tasks_run_while_every_stage_host_lives(ray_runtime):
    import ray

    from app.services.jobs import JOB_TASK_OPTIONS
    from pipelines import AnalyzeOptions, GroundingConfig
    from pipelines.spine import graph
    from pipelines.spine.hosts import stage_hosts

    options = AnalyzeOptions(grounding=GroundingConfig(queries=["a door closes"]))
    options.stages.track = options.stages.ocr = True
    hosts = stage_hosts(graph.nodes(options))
    assert len(hosts) == len(graph.GRAPH)  # every node's host, grounding, tracking and text on screen included
    ray.get([host.pid.remote() for host in hosts.values()], timeout=120)
    task = ray.remote(**JOB_TASK_OPTIONS)(lambda: "ran")
    refs = [task.remote() for _ in range(int(ray.cluster_resources()["CPU"]))]  # as many as the job manager runs
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=60)
    assert len(ready) == len(refs), f"{len(refs) - len(ready)} task(s) not scheduled; free: {ray.available_resources()}"
    assert ray.get(ready) == ["ran"] * len(refs)


def test_a_small_machine_runs_every_node_in_one_stage_host_and_a_bad_setting_is_refused(monkeypatch):
    """FORESIGHT_STAGE_HOSTS: "auto" puts every node in one process on a local cluster of up to 2 CPUs (one Python
    and Ray worker less) and keeps the declared hosts (the picture's models apart) on more CPUs or a named
    cluster; "one" and "split" force either; anything else is one clear error."""
    import pytest

    from models.errors import BadInput
    from pipelines.spine import graph, hosts

    def processes() -> int:
        return len({hosts.host_of(n) for n in graph.GRAPH})

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delenv(hosts.HOSTS_ENV, raising=False)
    monkeypatch.setattr(hosts.os, "cpu_count", lambda: 2)
    assert processes() == 1
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:6379")
    assert processes() == 2
    monkeypatch.delenv("RAY_ADDRESS")
    monkeypatch.setattr(hosts.os, "cpu_count", lambda: 8)
    assert processes() == 2 and {hosts.host_of(n) for n in graph.GRAPH if n.name == "visual"} == {"visual"}
    monkeypatch.setenv(hosts.HOSTS_ENV, "one")
    assert processes() == 1
    monkeypatch.setenv(hosts.HOSTS_ENV, "split")
    monkeypatch.setattr(hosts.os, "cpu_count", lambda: 2)
    assert processes() == 2
    monkeypatch.setenv(hosts.HOSTS_ENV, "three")
    with pytest.raises(BadInput, match="FORESIGHT_STAGE_HOSTS must be one, split or auto"):
        hosts.host_of(graph.GRAPH[0])


def test_the_whole_second_goes_to_the_one_host_in_one_call(monkeypatch):
    """`one_host`: when every node's handle names one host, the ingest hands it each second whole (its `second`);
    with two hosts, or FORESIGHT_NODE_CALLS=1 (the benchmarks' reference), one call per node."""
    from pipelines.spine.hosts import NODE_CALLS_ENV, NodeHandle, one_host

    monkeypatch.delenv(NODE_CALLS_ENV, raising=False)
    shared, visual = "host-all", "host-visual"  # (stand-ins: Ray's handles compare by actor the same way)
    together = {name: NodeHandle(shared, name) for name in ("speech", "visual", "safety")}
    assert one_host(together) == shared
    assert one_host({**together, "visual": NodeHandle(visual, "visual")}) is None
    monkeypatch.setenv(NODE_CALLS_ENV, "1")
    assert one_host(together) is None
