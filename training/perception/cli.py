"""`foresight eval perception [--json]`: the default output scored on a corpus-v3 split (test by default).

Prints per-class audio and visual event F1, false events per minute on eventless clips, WER, and the
grounding figures; `--json` prints the same as one JSON object (`training/perception/report.py`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def format_report(r: dict) -> str:
    """The report as a short table a person reads."""
    lines = [f"corpus {r['corpus']}, split {r['split']}: {r['clips']} clips"]
    for m in ("audio", "visual"):
        f1 = r[f"{m}_event_f1"]
        mean = "n/a" if f1["mean"] is None else f"{f1['mean']:.3f}"
        lines.append(f"{m} event F1 (tIoU 0.5), mean over {f1['classes']} classes: {mean}")
        lines += [f"  {name:<24} {score:.3f}" for name, score in sorted(f1["per_class"].items())]
    fp = r["false_events_per_min"]
    lines.append(f"false events per minute on eventless clips ({r['eventless_seconds']} s): "
                 + ("n/a" if fp is None else f"{fp:.2f}"))
    if "asr" in r:
        a = r["asr"]
        lines.append(f"WER {a['model']}: " + ("n/a (no recorded English voices)" if a["wer"] is None else
                     f"{100 * a['wer']:.1f} % over {a['files']} recordings, {a['ref_words']} words; "
                     f"first 0.3 s cut {100 * a['wer_first_0.3s_cut']:.1f} %; RTF {a['rtf']:.3f}"))
    if "grounding" in r:
        g = r["grounding"]
        lines.append("grounding: " + ", ".join(f"{k} {v:.3f}" for k, v in g.items() if isinstance(v, float)))
    return "\n".join(lines)


def eval_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="foresight eval perception", description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", type=Path, default=Path("data/corpus_v3"), help="a corpus-v3 folder")
    p.add_argument("--split", default="test", choices=["train", "val", "test"])
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    p.add_argument("--out", type=Path, help="also write the JSON here")
    p.add_argument("--prefm-threshold", type=float, help="score the parser with this PreFM threshold instead of "
                   "the default (for selecting it on val)")
    p.add_argument("--prefm-model", metavar="PATH", help="score this PreFM checkpoint instead of the shipped one")
    p.add_argument("--events", choices=["auto", "union", "prefm", "tags"], default="auto",
                   help="which event output to score (default: the default output)")
    p.add_argument("--no-asr", action="store_true", help="skip the WER measurement")
    p.add_argument("--no-grounding", action="store_true", help="skip the grounding measurement")
    a = p.parse_args(argv)
    if not (a.corpus / "corpus.json").is_file() or not (a.corpus / "embedded").is_dir():
        print(f"error: no encoded corpus at {a.corpus} (build it: foresight train corpus --version 3 --out "
              f"{a.corpus})", file=sys.stderr)
        return 2
    import torch

    from training.perception.report import perception_report

    torch.set_num_threads(1)
    from pipelines.stages.config import StageConfig

    config = StageConfig(events_model=a.events, prefm_checkpoint=a.prefm_model)
    if a.prefm_model and not Path(a.prefm_model).is_file():
        print(f"error: no PreFM checkpoint at {a.prefm_model}", file=sys.stderr)
        return 2
    if a.prefm_threshold is not None:
        if not 0 < a.prefm_threshold < 1:
            print("error: --prefm-threshold must be in (0, 1)", file=sys.stderr)
            return 2
        config.prefm_threshold = a.prefm_threshold
    try:
        report = perception_report(a.corpus, a.split, config, asr=not a.no_asr, grounding=not a.no_grounding)
    except ValueError as exc:  # e.g. the corpus holds the other YAMNet's scores
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(report, indent=1)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(text + "\n")
    print(text if a.json else format_report(report))
    return 0
