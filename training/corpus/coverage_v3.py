"""Corpus v3 coverage: how many kept recordings each LLP class has and which split `assign_sources` gives them,
without composing or encoding a clip (seconds, not the 35-minute build).

    python -m training.corpus.coverage_v3 [--seed 0] [--takes | --takes-all] [--against OLD_VERDICTS.json]

reads the YAMNet verdicts (`docs/results/corpus_v3_label_check.json`, written by `label_check.check_recordings`
when the inventory changed), keeps what the check keeps, and prints one row per class with recordings: kept
files (weak ones counted in brackets), their distinct source packages, and train / val / test counts; then the
backgrounds and distractors, and the classes a recording never trained on can test (>= 2 kept recordings).
`--takes` adds, for every pair of kept recordings of one class, how alike their waveforms are (`take_overlap`):
two packages that ship cuts of one take would score near 1 and must not count as two recordings (`--takes-all`
compares dropped files too). `--against` names an earlier verdicts file (e.g. from `git show`) and lists the files
whose split differs between that file's kept set and today's.
"""

from __future__ import annotations

import argparse
import itertools
from collections import Counter, defaultdict

import numpy as np

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


def take_overlap(a: np.ndarray, b: np.ndarray, max_s: float = 8.0, rate: int = 16_000) -> float:
    """Highest normalised cross-correlation of the shorter wave's first `max_s` seconds against every stretch of
    the longer one (both at `rate`): about 1 when one contains the other, near 0 for unrelated recordings
    (sustained tones of one pitch also score high, so a high value asks for a listen, not a verdict)."""
    a, b = (a, b) if a.size <= b.size else (b, a)
    a, b = a[: int(max_s * rate)].astype(np.float64), b[: int(30 * rate)].astype(np.float64)
    if a.size < 2 or not np.any(a):
        return 0.0
    n = 1 << int(np.ceil(np.log2(a.size + b.size)))
    xc = np.fft.irfft(np.fft.rfft(b, n) * np.conj(np.fft.rfft(a, n)), n)[: b.size - a.size + 1]
    energy = np.concatenate([[0.0], np.cumsum(b**2)])
    window = np.sqrt(np.maximum(energy[a.size:] - energy[: -a.size], 1e-12))[: xc.size]
    return float(np.max(np.abs(xc) / (np.linalg.norm(a) * window + 1e-9)))


def takes_report(recs: list[Recording]) -> list[str]:
    from training.corpus.real_sources import load_recording

    by_class: dict[str, list[Recording]] = defaultdict(list)
    for r in recs:
        if r.role == "event" and r.llp and r.llp != "Speech":
            by_class[r.llp].append(r)
    lines = ["", "| class | recording | recording | take overlap |", "| --- | --- | --- | --- |"]
    for llp, recs in sorted(by_class.items()):
        for a, b in itertools.combinations(recs, 2):
            v = take_overlap(load_recording(a.locator), load_recording(b.locator))
            lines.append(f"| {llp} | {a.key} | {b.key} | {v:.2f} |")
    return lines


def moved(old_rows: list[dict], rows: list[dict], recs: list[Recording], photos: list, seed: int) -> list[str]:
    """Files kept by both verdict sets whose seed split differs between the two inventories."""
    from training.corpus.label_check import kept_keys

    old_keys = {r["key"] for r in old_rows}
    before = assign_sources([r for r in recs if r.key in kept_keys(old_rows) and r.key in old_keys], photos, seed)
    after = assign_sources([r for r in recs if r.key in kept_keys(rows)], photos, seed)
    return [f"{k}: {s} -> {after.split_of[k]}" for k, s in sorted(before.split_of.items())
            if k in after.split_of and after.split_of[k] != s]


def report(seed: int = 0, takes: str = "", against: str = "", version: int = 4) -> str:
    import json

    from training.corpus.compose_v3 import _unique_photos
    from training.corpus.label_check import kept_keys
    from training.corpus.real_sources import all_photos, all_recordings

    rows = json.loads(LABEL_CHECK.read_text())["recordings"]
    everything = all_recordings()
    if [r["key"] for r in rows] != [r.key for r in everything]:
        raise SystemExit(f"{LABEL_CHECK} is stale: rerun label_check.check_recordings first")
    recs = everything if version >= 4 else all_recordings(extra=False)
    weak = {r["key"] for r in rows if r["status"] == "weak"}
    kept = [r for r in recs if r.key in kept_keys(rows)]
    photos = _unique_photos(all_photos())
    pools = assign_sources(kept, photos, seed)
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
    if against:
        changed = moved(json.loads(open(against).read())["recordings"], rows, recs, photos, seed)
        lines += ["", f"files kept in both {against} and now whose split changed: {len(changed)}", *changed]
    if takes:
        lines += takes_report(kept if takes == "kept" else recs)
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--takes", action="store_const", const="kept", default="",
                    help="also compare the waveforms of same-class kept recordings")
    ap.add_argument("--takes-all", dest="takes", action="store_const", const="all",
                    help="the same over every event recording, dropped ones included")
    ap.add_argument("--against", default="", help="an earlier verdicts file: list files whose split changed")
    ap.add_argument("--version", type=int, choices=(3, 4), default=4,
                    help="the corpus whose inventory to report: 3 (first source round) or 4 (both rounds)")
    args = ap.parse_args()
    print(report(args.seed, args.takes, args.against, args.version))


if __name__ == "__main__":
    main()
