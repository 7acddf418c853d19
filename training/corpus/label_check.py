"""Check file-name labels against YAMNet: a recording called `violin.ogg` should make YAMNet say "Violin".

For every event recording, YAMNet scores each second of the recording; `support` is the highest probability
any second gives the LLP class or one of its related AudioSet classes (`models.taxonomy.LLP_RELATED`), `own`
the same for the class itself. A label is `agree` when own >= 0.2 or support >= 0.3, `weak` when support >=
0.05 (kept, flagged), `disagree` below (dropped: the name and the sound tell different stories). Backgrounds and
distractors must not sound like a target: one whose seconds give any LLP class >= 0.5 is dropped as `target`.
The verdicts are written once (`docs/results/corpus_v3_label_check.json`) and read by the composer.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from models.prefm.labels import LLP_CLASSES
from models.taxonomy import audioset_names, llp_yamnet_index, llp_yamnet_indices
from training.corpus.real_sources import Recording, all_recordings, load_recording

RATE = 16_000
AGREE_OWN, AGREE_SUPPORT, WEAK_SUPPORT, NONTARGET_MAX = 0.2, 0.3, 0.05, 0.5
KEPT = ("agree", "weak", "ok")


def second_scores(tagger, wave: np.ndarray, max_seconds: int = 20) -> np.ndarray:  # noqa: ANN001 - YamnetTagger
    """(T, 521) YAMNet probabilities, one row per second of the recording (at most `max_seconds`)."""
    n = max(1, min(max_seconds, int(np.ceil(wave.size / RATE))))
    return np.stack([tagger.scores(wave[k * RATE:(k + 1) * RATE]) for k in range(n)])


def verdict(rec: Recording, scores: np.ndarray) -> dict:
    """The check's record for one recording (see the module docstring for the rule)."""
    names = audioset_names()
    mean = scores.mean(0)
    top = [[names[i], round(float(mean[i]), 3)] for i in np.argsort(mean)[::-1][:3]]
    row: dict = {"key": rec.key, "llp": rec.llp, "role": rec.role, "seconds": int(scores.shape[0]), "top": top}
    if rec.role == "event" and rec.llp:
        own = float(scores[:, llp_yamnet_index(rec.llp)].max())
        support = float(scores[:, llp_yamnet_indices(rec.llp)].max())
        row.update(own=round(own, 3), support=round(support, 3),
                   status="agree" if own >= AGREE_OWN or support >= AGREE_SUPPORT else
                   "weak" if support >= WEAK_SUPPORT else "disagree")
    else:
        llp_scores = scores[:, [llp_yamnet_index(c) for c in LLP_CLASSES]].max(0)
        worst = int(np.argmax(llp_scores))
        row.update(max_target=LLP_CLASSES[worst], max_target_prob=round(float(llp_scores[worst]), 3),
                   status="target" if llp_scores[worst] >= NONTARGET_MAX else "ok")
    return row


def check_recordings(out: str | Path, progress: bool = True) -> list[dict]:
    """Score every recording of `all_recordings()` and write the verdicts to `out` (JSON); reuse them if there."""
    out = Path(out)
    recs = all_recordings()
    if out.is_file():
        rows = json.loads(out.read_text())["recordings"]
        if [r["key"] for r in rows] == [r.key for r in recs]:
            return rows
    from tqdm import tqdm

    from models.audio.tags import YamnetTagger

    tagger = YamnetTagger(threads=1)
    rows = [verdict(r, second_scores(tagger, load_recording(r.locator)))
            for r in tqdm(recs, desc="YAMNet label check", disable=not progress)]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"rule": {"agree_own": AGREE_OWN, "agree_support": AGREE_SUPPORT,
                                        "weak_support": WEAK_SUPPORT, "nontarget_max": NONTARGET_MAX},
                               "recordings": rows}, indent=1))
    return rows


def kept_keys(rows: list[dict]) -> set[str]:
    return {r["key"] for r in rows if r["status"] in KEPT}
