"""A default analysis, a query included, never imports torch once this machine has exported its models to ONNX
(the first run on a machine may: it exports PreFM, the grounder and MiniLM once, `models/onnx_runtime.py`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.helpers.cli import ROOT

PROBE = """
import json, sys
from app.cli import main
code = main(["analyze", sys.argv[1], "--query", "a phone rings", "--out", sys.argv[2]])
heavy = sorted(m for m in ("torch", "torchaudio", "torchvision", "transformers", "sentence_transformers")
               if m in sys.modules)
print(json.dumps({"code": code, "heavy": heavy}))
"""


def test_a_default_analysis_with_a_query_never_imports_torch(demo_clip, tmp_path):
    out = tmp_path / "result.json"
    for _attempt in range(2):  # the first run exports what this machine has not exported yet
        proc = subprocess.run([sys.executable, "-c", PROBE, str(demo_clip[0]), str(out)], cwd=ROOT, timeout=300,
                              capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert proc.returncode == 0, proc.stderr[-2000:]
        probe = json.loads(proc.stdout.strip().splitlines()[-1])
        assert probe["code"] == 0
        if not probe["heavy"]:
            break
    assert probe["heavy"] == [], f"imported on the second run too: {probe['heavy']}"
    result = json.loads(out.read_text())
    assert result["events"] and result["transcript"] and result["moments"], sorted(result)
