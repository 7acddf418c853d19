"""Ray start-up: an existing cluster when RAY_ADDRESS is set, otherwise a quiet local one."""

from __future__ import annotations

import logging
import os


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
