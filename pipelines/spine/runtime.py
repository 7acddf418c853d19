"""Ray start-up: an existing cluster when RAY_ADDRESS is set, otherwise a quiet local one on loopback.

A local cluster is for this machine alone: Ray's servers (GCS, raylet, workers, agents) bind to the node's
address, and Ray picks the machine's network address unless told that the node takes part in no cluster
(`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`, read by Ray on Linux too). Then every port listens on 127.0.0.1 only
and nobody else on the network can join it or run code on it. A real cluster (`RAY_ADDRESS`) is reached with
Ray's token authentication: see docs/deploy.md.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading

# The settings read by stage code in Ray's workers (model backends, decoding, Whisper's priority, native logs).
# A local cluster's workers inherit the driver's environment; a cluster named by RAY_ADDRESS was started with
# its own, so these travel with the job (`worker_environment`). Paths (FORESIGHT_CACHE, FORESIGHT_PASBENCH_DIR)
# and secrets stay each machine's own: a path on the driver need not exist on a worker, and a key sent in a
# runtime_env is shown by Ray's job listing.
WORKER_SETTINGS = ("FORESIGHT_PREFM", "FORESIGHT_GROUNDER", "FORESIGHT_MINILM", "FORESIGHT_YAMNET",
                   "FORESIGHT_WHISPER_NICE", "FORESIGHT_DECODE_ALL", "FORESIGHT_NATIVE_LOGS")


def worker_environment() -> dict[str, str]:
    """The variables every Ray worker of this driver's job gets: the thread count, and each of
    `WORKER_SETTINGS` the driver has set (one it has not set is left to the worker's own environment)."""
    from pipelines.spine.threads import thread_environment

    settings = {name: os.environ[name] for name in WORKER_SETTINGS if name in os.environ}
    return {**thread_environment(), **settings}


def ensure_ray(num_cpus: int | None = None) -> None:
    """Join RAY_ADDRESS's cluster, or start a loopback-only local one sized for this machine's streams."""
    address = os.environ.get("RAY_ADDRESS") or None
    if address is None:
        os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # read when ray is imported, and by its children
    import ray

    if ray.is_initialized():
        return
    if address is None:
        from ray._private import ray_constants

        ray_constants.ENABLE_RAY_CLUSTER = False  # ray may have been imported before the variable was set
        # Loopback-only: nothing outside this machine can connect, so no token is needed (Ray 2.60 would
        # otherwise write one to ~/.ray and warn on every start).
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        # glibc gives each thread that allocates a malloc arena of its own, up to 8 per core, and keeps what is
        # freed there: a stage host's call threads (up to 128) and an ingest actor's decode threads would hold
        # several arenas' worth of freed memory each. Two per process is enough for one call at a time. Read
        # by each process of the local cluster when it starts (raylet, workers), not by this running driver.
        os.environ.setdefault("MALLOC_ARENA_MAX", "2")
        # A fixed mmap threshold: glibc otherwise raises it after each large free (up to 32 MB), so the OCR
        # models' varying buffers came from the heap and stayed there (the stage host grew 0.6 -> 1.4 GB in a
        # minute of the moving benchmark clip; 0.6 GB with this). 4 MB keeps a 720p frame (2.7 MB) on the heap.
        os.environ.setdefault("MALLOC_MMAP_THRESHOLD_", str(4 << 20))
        # No idle workers kept warm: Ray starts num_cpus task workers with the first driver (78 MB each) that no
        # stage uses, since every actor gets a worker of its own. A task's first call pays about 1 s instead.
        os.environ.setdefault("RAY_enable_worker_prestart", "0")
        os.environ.setdefault("RAY_prestart_worker_first_driver", "0")
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
    from pipelines.spine.ray_dashboard import dashboard_wanted, lean_local_start

    dashboard = dashboard_wanted()  # then Ray's default: its dashboard if installed, else the minimal head
    # Every worker, on this machine or a cluster's, runs with the driver's thread count and stage settings.
    kwargs = dict(include_dashboard=None if dashboard else False, logging_level=logging.ERROR, log_to_driver=False,
                  configure_logging=True, runtime_env={"env_vars": worker_environment()})
    if address is None:
        kwargs["num_cpus"] = num_cpus or os.cpu_count() or 2
        from pipelines.spine.reaper import start_reaper

        start_reaper()  # the local cluster ends with this process, even after kill -9 (agents included)
    # Ray's dashboard head and agent only when asked for (FORESIGHT_RAY_DASHBOARD=1); a cluster's are its own.
    with contextlib.nullcontext() if dashboard or address is not None else lean_local_start():
        ray.init(address=address, **kwargs)


def shutdown_ray() -> None:
    import ray

    if ray.is_initialized():
        ray.shutdown()


_RAY_LOCK = threading.Lock()


def ensure_ray_in_keeper_thread() -> None:
    """Start Ray from a thread that lives as long as the process.

    Ray's local processes (GCS, raylet) are started with a parent-death signal, which Linux sends when the
    *thread* that spawned them ends; Streamlit runs every script run in a short-lived thread, so starting Ray
    there would kill it a moment later.
    """
    import ray

    with _RAY_LOCK:
        if ray.is_initialized():
            return
        ready, errors = threading.Event(), []

        def keeper() -> None:
            try:
                ensure_ray()
            except BaseException as exc:  # handed to the caller below
                errors.append(exc)
            finally:
                ready.set()
            threading.Event().wait()

        threading.Thread(target=keeper, name="ray-keeper", daemon=True).start()
        ready.wait()
        if errors:
            raise errors[0]
