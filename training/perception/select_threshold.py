"""Choose PreFM's event threshold for the default output on the real-recording val split (corpus v3).

In the union output PreFM alone speaks for the classes it covers (their tags are dropped), so a miss there has
no fallback: the rule is the lowest threshold whose val false-event rate on eventless clips is under one per
minute. The shipped checkpoint was trained on synthetic clips, and at its training threshold (0.5) it fires
Telephone bell ringing on factory noise and Speech on instruments.

    python -m training.perception.select_threshold --corpus data/corpus_v3 --out docs/results/prefm_threshold_val.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

THRESHOLDS = (0.5, 0.7, 0.85)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", type=Path, default=Path("data/corpus_v3"))
    p.add_argument("--out", type=Path, default=Path("docs/results/prefm_threshold_val.json"))
    a = p.parse_args(argv)
    if not (a.corpus / "corpus.json").is_file():
        p.error(f"no corpus at {a.corpus}")
    import torch

    from pipelines.stages.config import StageConfig
    from training.perception.report import event_report

    torch.set_num_threads(1)
    rows = []
    for threshold in THRESHOLDS:
        r = event_report(a.corpus, "val", StageConfig(prefm_threshold=threshold))
        rows.append({"prefm_threshold": threshold, "audio_mean_f1": r["audio_event_f1"]["mean"],
                     "audio_per_class": r["audio_event_f1"]["per_class"], "visual_mean_f1": r["visual_event_f1"]["mean"],
                     "false_events_per_min": r["false_events_per_min"]})
        print(json.dumps(rows[-1]), flush=True)
    quiet = [r for r in rows if (r["false_events_per_min"] or 0.0) < 1.0]
    chosen = min(quiet, key=lambda r: r["prefm_threshold"]) if quiet else min(rows, key=lambda r: r["false_events_per_min"])
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps({"split": "val", "rule": "lowest threshold with < 1 false event per eventless minute",
                                 "rows": rows, "chosen": chosen["prefm_threshold"]}, indent=1) + "\n")
    print(f"chosen: {chosen['prefm_threshold']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
