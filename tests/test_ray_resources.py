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
    options.stages.track = True
    hosts = stage_hosts(graph.nodes(options))
    assert len(hosts) == len(graph.GRAPH)  # every node's host, grounding and tracking included
    ray.get([host.pid.remote() for host in hosts.values()], timeout=120)
    task = ray.remote(**JOB_TASK_OPTIONS)(lambda: "ran")
    refs = [task.remote() for _ in range(int(ray.cluster_resources()["CPU"]))]  # as many as the job manager runs
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=60)
    assert len(ready) == len(refs), f"{len(refs) - len(ready)} task(s) not scheduled; free: {ray.available_resources()}"
    assert ray.get(ready) == ["ran"] * len(refs)
