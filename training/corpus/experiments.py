"""The corpus experiments in one command: train PreFM (+ no-future and offline) and the grounder (+ equal
weights) on the training clips, score everything on the held-out test clips, ship the two defaults.

    python -m training.corpus.experiments --corpus data/corpus --runs data/corpus_runs [--ship]
    python -m training.corpus.experiments --corpus data/corpus_v2 --runs data/corpus_v2_runs_seed88 \
        --only prefm --seed 88                # another training seed, same recipe
    python -m training.corpus.experiments --corpus data/corpus_v2 --runs data/corpus_v2_runs \
        --only ship --ship-prefm              # ship PreFM alone; the grounder keeps its corpus

It only calls the public entry points (`training.prefm.cli`, `training.trisense.cli`), so the numbers it
prints are what `foresight eval prefm` / `foresight eval grounding` print on the same files. Results go to
`<runs>/prefm_test.json` and `<runs>/grounding_test.json`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import time
from pathlib import Path

from models import prefm, trisense
from training.corpus.ship import corpus_stamp, ship

ROOT = Path(__file__).resolve().parents[2]
PREFM_SHIPPED = prefm.SHIPPED_CHECKPOINT
GROUNDER_SHIPPED = trisense.CORPUS_V1_CHECKPOINT  # corpus v1 ships here; the default is now v3

PREFM_TRAIN = ["--preset", "small", "--epochs", "300", "--batch-size", "32", "--lr", "5e-4", "--lr-min", "5e-6",
               "--warmup", "20", "--val-every", "10", "--seed", "87", "--positional", "--quiet"]
GROUNDER_TRAIN = ["--epochs", "120", "--batch-size", "32", "--lr", "1e-3", "--seed", "0", "--no-progress"]


def _captured(fn, argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = fn(argv)
    return code, out.getvalue()


def trainval_jsonl(corpus: Path) -> Path:
    """The grounder trains on train + val queries (it has no model selection; val uses training wordings)."""
    path = corpus / "grounding" / "trainval.jsonl"
    path.write_text("".join((corpus / "grounding" / f"{s}.jsonl").read_text() for s in ("train", "val")))
    return path


def run_prefm(corpus: Path, runs: Path, extra: list[str]) -> dict:
    from training.prefm.cli import eval_main, train_main

    t0 = time.time()
    code = train_main(["--layout", "embedded", "--root", str(corpus), "--variant", "all",
                       "--out", str(runs / "prefm"), *PREFM_TRAIN, *extra])
    if code:
        raise SystemExit(code)
    train_s = time.time() - t0
    code, text = _captured(eval_main, ["--layout", "embedded", "--root", str(corpus), "--split", "test",
                                       "--checkpoints", str(runs / "prefm"), "--json"])
    if code:
        raise SystemExit(code)
    results = json.loads(text)
    payload = {"results": results, "train_s": round(train_s, 1), "args": PREFM_TRAIN + extra}
    (runs / "prefm_test.json").write_text(json.dumps(payload, indent=2))
    return payload


def run_grounder(corpus: Path, runs: Path, extra: list[str]) -> dict:
    from training.trisense.cli import eval_main, train_main

    feats = str(corpus / "grounding" / "features")
    ckpt = runs / "grounder" / "grounder.pt"
    t0 = time.time()
    code = train_main(["--data", str(trainval_jsonl(corpus)), "--features", feats, "--out", str(ckpt),
                       "--with-equal-baseline", *GROUNDER_TRAIN, *extra])
    if code:
        raise SystemExit(code)
    train_s = time.time() - t0
    out = runs / "grounding_test.json"
    code, table = _captured(eval_main, ["--data", str(corpus / "grounding" / "test.jsonl"), "--features", feats,
                                        "--checkpoint", str(ckpt), "--out", str(out)])
    if code:
        raise SystemExit(code)
    payload = json.loads(out.read_text())
    payload.update({"train_s": round(train_s, 1), "args": GROUNDER_TRAIN + extra, "table": table})
    out.write_text(json.dumps(payload, indent=2))
    return payload


def ship_defaults(corpus: Path, runs: Path, grounder: bool = True) -> None:
    """Copy the trained PreFM (and, unless `grounder` is False, the grounder) to the shipped paths, stamped
    with the corpus and test scores. Each shipped file records its own corpus, so the two may come from
    different corpora (the leakage test checks each against its own)."""
    prefm = json.loads((runs / "prefm_test.json").read_text())
    ship(runs / "prefm" / "prefm.pt", PREFM_SHIPPED, corpus_stamp(corpus, ("train",)),
         {"test": prefm["results"]["prefm"]}, corpus_root=corpus)
    if not grounder:
        return
    grounding = json.loads((runs / "grounding_test.json").read_text())
    ship(runs / "grounder" / "grounder.pt", GROUNDER_SHIPPED, corpus_stamp(corpus, ("train", "val")),
         {"test_mean_over_settings": grounding["mean_over_settings"]})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.corpus.experiments", description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", required=True, help="folder written by `foresight train corpus`")
    p.add_argument("--runs", required=True, help="where checkpoints and result JSON go")
    p.add_argument("--only", choices=["prefm", "grounder", "ship"], help="run one stage")
    p.add_argument("--ship", action="store_true", help="also copy the defaults into models/*/checkpoints/")
    p.add_argument("--ship-prefm", action="store_true",
                   help="copy only PreFM (from --runs) into models/prefm/checkpoints/; the grounder stays")
    p.add_argument("--seed", type=int, help="training seed for PreFM (default: the recipe's 87)")
    a = p.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    corpus, runs = Path(a.corpus), Path(a.runs)
    if not (corpus / "data_info" / "train_pd.csv").is_file():
        print(f"error: no encoded corpus at {corpus}", file=sys.stderr)
        return 2
    runs.mkdir(parents=True, exist_ok=True)
    if a.only in (None, "prefm"):
        r = run_prefm(corpus, runs, [] if a.seed is None else ["--seed", str(a.seed)])
        print(json.dumps({k: {m: round(v[m], 2) for m in ("evt_f1_avg_audio", "evt_f1_avg_visual", "evt_f1_avg_av",
                                                              "mean_evt_f1") if m in v}
                          for k, v in r["results"].items()}, indent=1))
    if a.only in (None, "grounder") and not a.ship_prefm:
        print(run_grounder(corpus, runs, [])["table"])
    if a.ship_prefm:
        ship_defaults(corpus, runs, grounder=False)
        print(f"shipped {PREFM_SHIPPED}")
    elif a.ship or a.only == "ship":
        ship_defaults(corpus, runs)
        print(f"shipped {PREFM_SHIPPED} and {GROUNDER_SHIPPED}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
