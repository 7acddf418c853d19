"""Run the `foresight` command line from the tests (in the repository root, this interpreter)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from training.media.loopback import free_port

ROOT = Path(__file__).resolve().parents[2]
FORESIGHT = [sys.executable, "-m", "app.cli"]

__all__ = ["FORESIGHT", "ROOT", "free_port", "run_cli"]


def run_cli(*args: str, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*FORESIGHT, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
