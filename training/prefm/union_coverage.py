"""Choose on val which classes a PreFM checkpoint speaks for in the default output (its `meta["covers"]`).

The union (`pipelines/stages/union.py`) hands every covered class to PreFM and silences the tagger for it, so a
checkpoint that covers every class it was trained on can make the default output worse than the taggers alone
(corpus v4: val audio F1 0.458 -> 0.083, `docs/prefm.md`). Here a class stays covered only where the default output
with PreFM speaking for it (the union over the checkpoint's full coverage, the tagger-evidence gate included) beats
the taggers alone on a split's per-class event F1 (tIoU 0.5); classes the split does not hold are left to the
taggers. The copy carries the choice and the scores it came from (`meta["covers_chosen"]`).

    python -m training.prefm.union_coverage --corpus data/corpus_v4 --split val \
        --prefm-model CKPT --prefm-threshold 0.5 --out CKPT_val_covers.pt
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from models import checkpoints

MODALITIES = ("audio", "visual")


def choose_covers(union: dict, tags: dict, trained: dict[str, list[str]]) -> dict[str, list[str]]:
    """Per modality, the trained classes whose F1 in the union is strictly above the taggers-only F1 (reports as
    `training.perception.report.event_report` writes them)."""
    covers = {}
    for m in MODALITIES:
        mine, theirs = union[f"{m}_event_f1"]["per_class"], tags[f"{m}_event_f1"]["per_class"]
        covers[m] = sorted(c for c in trained.get(m, []) if c in mine and mine[c] > theirs.get(c, 0.0))
    return covers


def restamp(src: str | Path, dst: str | Path, covers: dict[str, list[str]], evidence: dict) -> Path:
    """Copy checkpoint `src` to `dst` with `covers` as its coverage and the evidence for the choice."""
    payload = checkpoints.read(src)
    meta = dict(payload.get("meta") or {})
    meta["covers"] = {m: list(covers.get(m, [])) for m in MODALITIES}
    meta["covers_chosen"] = evidence
    payload["meta"] = meta
    return checkpoints.write(payload, dst)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.prefm.union_coverage", description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", type=Path, required=True, help="an encoded corpus (v3 layout)")
    p.add_argument("--split", default="val", choices=["train", "val"], help="never test: this is a selection")
    p.add_argument("--prefm-model", required=True, help="a checkpoint stamped with its training coverage")
    p.add_argument("--prefm-threshold", type=float, default=None)
    p.add_argument("--out", type=Path, required=True, help="the restamped copy")
    a = p.parse_args(argv)
    if not (a.corpus / "embedded").is_dir() or not Path(a.prefm_model).is_file():
        print(f"error: need an encoded corpus at {a.corpus} and a checkpoint at {a.prefm_model}", file=sys.stderr)
        return 2
    import torch

    from pipelines.stages.config import StageConfig
    from pipelines.stages.union import covered_classes
    from training.perception.report import event_report

    torch.set_num_threads(1)
    reports = {}
    for events in ("union", "tags"):
        config = StageConfig(events_model=events, prefm_checkpoint=a.prefm_model)
        if a.prefm_threshold is not None:
            config.prefm_threshold = a.prefm_threshold
        reports[events] = event_report(a.corpus, a.split, config)
    trained = {m: sorted(c) for m, c in covered_classes(str(Path(a.prefm_model).resolve())).items()}
    covers = choose_covers(reports["union"], reports["tags"], trained)
    evidence = {"corpus": str(a.corpus), "split": a.split, "prefm_threshold": a.prefm_threshold, "trained": trained,
                "per_class": {e: {m: r[f"{m}_event_f1"]["per_class"] for m in MODALITIES} for e, r in reports.items()}}
    restamp(a.prefm_model, a.out, covers, evidence)
    print(json.dumps({"covers": covers, **evidence}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
