"""Same input, same output: every runner pins the numeric libraries to one thread count
(`pipelines/spine/threads.py`), and nothing that reaches the result is timed, so a CLI analysis on a machine
with other CPU-bound jobs beside it gives the result an idle one gives."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pipelines.sinks.results import stable_view
from tests.helpers.cli import ROOT, run_cli

PROBE = """
import json, os, subprocess, sys
from pipelines.spine.threads import pin_threads
import numpy  # loaded before the pin: threadpoolctl must still reach its OpenBLAS
from threadpoolctl import threadpool_info
n = pin_threads()
child = subprocess.run([sys.executable, "-c", "import os; print(os.environ['OMP_NUM_THREADS'])"],
                       capture_output=True, text=True).stdout.strip()
print(json.dumps({"n": n, "blas": sorted({i["num_threads"] for i in threadpool_info()}), "child": child}))
"""


@pytest.mark.parametrize(("value", "expected"), [(None, 1), ("3", 3), ("zero", 1), ("0", 1)])
def test_pin_threads_reaches_loaded_libraries_and_children(value, expected):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS") and k != "FORESIGHT_THREADS"}
    if value is not None:
        env["FORESIGHT_THREADS"] = value
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"n": expected, "blas": [expected], "child": str(expected)}


@pytest.mark.slow
def test_the_cli_result_is_the_same_beside_cpu_bound_jobs(demo_clip, tmp_path):
    path, _ = demo_clip
    idle = tmp_path / "idle.json"
    assert run_cli("analyze", str(path), "--out", str(idle), "-q").returncode == 0
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 * (os.cpu_count() or 2))]
    try:
        loaded = tmp_path / "loaded.json"
        proc = run_cli("analyze", str(path), "--out", str(loaded), "-q", timeout=600)
    finally:
        for b in burners:
            b.kill()
            b.wait()
    assert proc.returncode == 0, proc.stderr
    assert stable_view(json.loads(loaded.read_text())) == stable_view(json.loads(idle.read_text()))
