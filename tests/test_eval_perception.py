"""`foresight eval perception` on a small corpus v3 built here by the real command: the split stays clean,
and the report scores the default output (the live parser replayed over the stored features)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.helpers.cli import run_cli
from training.corpus.compose_v3 import split_violations
from training.corpus.layout import load_truths
from training.corpus.real_sources import TUXPAINT_STAMPS

pytestmark = pytest.mark.skipif(not TUXPAINT_STAMPS.is_dir(), reason="tuxpaint-stamps-default not installed")


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("v3") / "corpus"
    proc = run_cli("train", "corpus", "--version", "3", "--clips", "8", "--asr", "", "--quiet", "--out", str(root),
                   timeout=1500)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return root


def test_a_built_corpus_feeds_no_file_to_two_splits(small_corpus):
    assert split_violations(small_corpus) == {}
    assert {t.split for t in load_truths(small_corpus)} == {"train", "val", "test"}


def test_eval_perception_reports_the_default_output(small_corpus):
    proc = run_cli("eval", "perception", "--corpus", str(small_corpus), "--split", "train", "--no-asr",
                   "--no-grounding", "--json", timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    train = [t for t in load_truths(small_corpus) if t.split == "train"]
    assert report["clips"] == len(train) and report["events"] == "auto"
    labelled = set()
    for t in train:
        labels = np.load(small_corpus / "label" / "label" / "audio" / f"{t.clip_id}.npy")
        labelled |= {i for i in np.flatnonzero(labels.any(axis=0))}
    audio = report["audio_event_f1"]
    assert audio["classes"] == len(labelled) and len(audio["per_class"]) == len(labelled)
    assert all(0.0 <= f <= 1.0 for f in audio["per_class"].values())
    assert report["false_events_per_min"] is None or report["false_events_per_min"] >= 0
    text = run_cli("eval", "perception", "--corpus", str(small_corpus), "--split", "train", "--no-asr",
                   "--no-grounding", timeout=900)
    assert text.returncode == 0 and "audio event F1 (tIoU 0.5)" in text.stdout


def test_eval_perception_without_a_corpus_exits_2(tmp_path):
    proc = run_cli("eval", "perception", "--corpus", str(tmp_path / "none"))
    assert proc.returncode == 2 and "no encoded corpus" in proc.stderr and "Traceback" not in proc.stderr


def test_scores_of_one_yamnet_are_not_read_with_the_others_settings(small_corpus):
    """The corpus was built with the default float YAMNet: its manifest says so, and asking for the w8a8 settings
    over it (or calibrating on test) is one error line, exit 2."""
    from training.corpus.calibrate_tags import main as calibrate_main
    from training.corpus.layout import corpus_yamnet

    assert corpus_yamnet(small_corpus) == "float"
    proc = run_cli("eval", "perception", "--corpus", str(small_corpus), "--split", "train", "--no-asr",
                   "--no-grounding", env={"FORESIGHT_YAMNET": "w8a8"})
    assert proc.returncode == 2 and "holds float YAMNet scores" in proc.stderr and "Traceback" not in proc.stderr
    with pytest.raises(SystemExit) as stop:
        calibrate_main(["--corpus", str(small_corpus), "--splits", "val,test"])
    assert stop.value.code == 2
