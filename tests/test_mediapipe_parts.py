"""MediaPipe's pose and face landmarkers load without MediaPipe's front doors (whose drawing utilities import
matplotlib.pyplot) and still find a real person; asked in a fresh process, as every analysis process starts."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers.cli import ROOT

SCRIPT = """
import json, sys
from models.encoders.visual import FaceCounter, PoseTracker
from training.media.synth import sample_image
photo = sample_image("astronaut")  # a real photo: one person, face to the camera
faces, poses = FaceCounter().detect(photo), PoseTracker(model="mediapipe")._landmarks(photo, 0)
print(json.dumps({"faces": len(faces), "poses": len(poses), "joints": len(poses[0]) if poses else 0,
                  "matplotlib": sorted(m for m in sys.modules if m.split(".")[0] == "matplotlib")[:3],
                  "families": sorted(m for m in sys.modules if m.startswith("mediapipe.tasks.python.")
                                     and m.count(".") == 3)}))
"""


def test_landmarkers_find_a_person_without_importing_matplotlib():
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=180,
                         check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["matplotlib"] == []
    assert (result["faces"], result["poses"], result["joints"]) == (1, 1, 33)
    assert "mediapipe.tasks.python.audio" not in result["families"]  # no other task family either
    assert "mediapipe.tasks.python.vision" in result["families"]
