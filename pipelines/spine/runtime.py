"""Ray start-up: an existing cluster when RAY_ADDRESS is set, otherwise a quiet local one."""

from __future__ import annotations

import logging
import os
import threading


def ensure_ray(num_cpus: int | None = None) -> None:
    import ray

    if ray.is_initialized():
        return
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # Ray 2.60 otherwise writes a token and warns
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
    address = os.environ.get("RAY_ADDRESS") or None
    kwargs = dict(include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False,
                  configure_logging=True)
    if address is None:
        kwargs["num_cpus"] = num_cpus or os.cpu_count() or 2
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
