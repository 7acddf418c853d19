"""Post-hoc check of issue 11 §4 step (b): one abstention threshold per modality instead of one for all.

Why: unseen concepts score under the threshold that seen concepts set, and the miss-vs-abstain trade differs by
modality (sounds, on-screen objects, sentences). The modality used is the one carrying the answer's largest
connector weight, which is known at inference (the asked modality is not). Each threshold is chosen on val with
`generalise.calibrate`; figures are val in-sample, as the global threshold's are.

    python -m training.trisense.modality_threshold data/runs/seed0/trisense.pt ...
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from models.trisense.features import MODALITIES, batch_features
from models.trisense.grounder import Grounder
from models.trisense.metrics import best_iou
from models.trisense.modeling_trisense import decode_spans
from training.trisense.evaluate import query_vectors
from training.trisense.generalise import calibrate
from training.trisense.open_vocab import OpenVocabData


@torch.no_grad()
def compare(g: Grounder, data: OpenVocabData) -> dict:
    """Val R@0.3, abstention and held-out R@0.3 under the global and the per-dominant-modality thresholds."""
    pos, neg = data.positives("val"), data.absent_queries("val")
    qv = query_vectors(pos + neg, g)
    spans, scores, dom = {}, {}, {}
    for r in pos + neg:  # one query at a time (unbatched)
        clip = data.features[r.vid]
        f, m, v = batch_features([clip], g.dims)
        q = qv[r.query][None]
        s = decode_spans(g.model(f, m, v, torch.from_numpy(q), g.evidence(q, [clip], v.shape[1])), top_k=1,
                         max_span_s=g.config.max_span_s)[0][0]
        spans[r.qid], scores[r.qid], dom[r.qid] = (s.start, s.end), s.score, MODALITIES[int(np.argmax(s.weights))]
    glob = calibrate(pos, neg, (spans, scores))
    per = {}
    for mod in MODALITIES:
        p, n = [r for r in pos if dom[r.qid] == mod], [r for r in neg if dom[r.qid] == mod]
        per[mod] = calibrate(p, n, (spans, scores)) if p and n else glob
    held = [r for r in pos if r.extra["category"] in data.held_out]

    def score(th) -> dict:
        ok = [scores[r.qid] >= th(r) and best_iou(spans[r.qid], r.windows) >= 0.3 for r in pos]
        return {"r1_iou03": float(np.mean(ok)), "abstention_accuracy": float(np.mean([scores[r.qid] < th(r) for r in neg])),
                "held_out_r1_iou03": float(np.mean([o for o, r in zip(ok, pos, strict=True) if r in held])) if held else None}

    return {"global": {"threshold": glob, **score(lambda r: glob)},
            "per_dominant_modality": {"thresholds": per, **score(lambda r: per[dom[r.qid]])}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.trisense.modality_threshold", description=compare.__doc__)
    p.add_argument("checkpoints", nargs="+")
    p.add_argument("--corpus", default="data/corpus_v3")
    p.add_argument("--speech-corpus", default="data/corpus_v2")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    for ck in args.checkpoints:
        g = Grounder.load(ck)
        data = OpenVocabData(Path(args.corpus), Path(args.speech_corpus), tuple(g.meta["corpus"]["held_out_concepts"]))
        out = compare(g, data)
        print(ck, {k: {kk: (round(vv, 3) if isinstance(vv, float) else vv) for kk, vv in v.items()} for k, v in out.items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
