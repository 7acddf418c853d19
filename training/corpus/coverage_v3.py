"""Corpus v3 coverage: how many kept recordings each LLP class has and which split `assign_sources` gives them,
without composing or encoding a clip (seconds, not the 35-minute build).

    python -m training.corpus.coverage_v3 [--seed 0]

reads the YAMNet verdicts (`docs/results/corpus_v3_label_check.json`, written by `label_check.check_recordings`
when the inventory changed), keeps what the check keeps, and prints one row per class with recordings: kept
files (weak ones counted in brackets), their distinct source packages, and train / val / test counts; then the
backgrounds and distractors, and the classes a recording never trained on can test (>= 2 kept recordings).
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict

from models.prefm.labels import LLP_CLASSES
from training.corpus.compose_v3 import CLIP_SPLITS, LABEL_CHECK, SourcePools, assign_sources
from training.corpus.real_sources import Recording


def class_splits(recordings: list[Recording], pools: SourcePools) -> dict[str, Counter]:
    """LLP class -> Counter of splits over its event recordings."""
    out: dict[str, Counter] = defaultdict(Counter)
    for r in recordings:
        if r.role == "event" and r.llp:
            out[r.llp][pools.split_of[r.key]] += 1
    return dict(out)


def untestable(splits: dict[str, Counter]) -> list[str]:
    """Classes with >= 2 recordings that lack a train or a test recording (the split rule says none may)."""
    return sorted(c for c, n in splits.items() if sum(n.values()) >= 2 and not (n["train"] and n["test"]))


def report(seed: int = 0) -> str:
    import json

    from training.corpus.compose_v3 import _unique_photos
    from training.corpus.label_check import kept_keys
    from training.corpus.real_sources import all_photos, all_recordings

    rows = json.loads(LABEL_CHECK.read_text())["recordings"]
    recs = all_recordings()
    if [r["key"] for r in rows] != [r.key for r in recs]:
        raise SystemExit(f"{LABEL_CHECK} is stale: rerun label_check.check_recordings first")
    weak = {r["key"] for r in rows if r["status"] == "weak"}
    kept = [r for r in recs if r.key in kept_keys(rows)]
    pools = assign_sources(kept, _unique_photos(all_photos()), seed)
    splits = class_splits(kept, pools)
    lines = ["| LLP class (audio) | kept (weak) | packages | train | val | test |", "| --- | --- | --- | --- | --- | --- |"]
    for llp in sorted(splits, key=lambda c: (-sum(splits[c].values()), c)):
        recs_c = [r for r in kept if r.role == "event" and r.llp == llp]
        n_weak = sum(r.key in weak for r in recs_c)
        lines.append(f"| {llp} | {len(recs_c)}" + (f" ({n_weak})" if n_weak else "") + f" | "
                     f"{', '.join(sorted({r.source for r in recs_c}))} | "
                     + " | ".join(str(splits[llp][s] or "–") for s in CLIP_SPLITS) + " |")
    for role in ("background", "distractor"):
        n = Counter(pools.split_of[r.key] for r in kept if r.role == role)
        lines.append(f"| {role}s | {sum(n.values())} | | " + " | ".join(str(n[s]) for s in CLIP_SPLITS) + " |")
    testable = sorted(c for c, n in splits.items() if sum(n.values()) >= 2)
    missing = [c for c in LLP_CLASSES if c not in splits]
    lines += ["", f"classes with kept recordings: {len(splits)}; testable (>= 2 recordings, one in train and one in "
              f"test): {len(testable)}: {', '.join(testable)}",
              f"one recording only: {', '.join(sorted(c for c, n in splits.items() if sum(n.values()) == 1))}",
              f"no recording: {', '.join(missing)}",
              f"classes with >= 2 recordings but no train or no test recording: {untestable(splits) or 'none'}"]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    print(report(ap.parse_args().seed))


if __name__ == "__main__":
    main()
