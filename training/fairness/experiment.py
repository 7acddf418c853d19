"""Camera-blind representations in miniature: characteristic-function matching across three cameras.

Synthetic per-second embeddings (`data.py`): 4,000 training, 2,000 validation and 2,000 test seconds from
three cameras with different event base rates. Every head has the same architecture and training; they differ
in the penalty: none, moment matching (baseline), or the characteristic-function distance at several
strengths. The strength is chosen on the validation split, before the test split is looked at: the
strongest lambda whose validation accuracy stays within 1.5 points of the plain head's. Leakage = held-out AUC
of fresh probes (logistic, MLP) predicting the camera from the representation; gap = largest difference in
positive-decision rate between cameras.
"""

from __future__ import annotations

import numpy as np
import torch

from training.experiment import Experiment, Result
from training.fairness.data import camera_embeddings
from training.fairness.head import FairConfig, fit_fair_head
from training.fairness.metrics import dp_gap, probe_auc

TRAIN, VAL, TEST = 4000, 2000, 2000
EPOCHS = 15
SIGMA = 0.5
CF_LAMBDAS = (3.0, 10.0, 30.0, 100.0)
MOMENTS_LAMBDA = 10.0
VAL_TOLERANCE = 0.01


def _reference_row(train, test) -> dict:
    """A logistic regression on the raw embeddings: the accuracy bar without any representation learning."""
    from sklearn.linear_model import LogisticRegression

    pred = LogisticRegression(max_iter=2000).fit(train.x, train.y).predict(test.x)
    return {"model": "logistic regression on raw embeddings", "penalty": "-", "lam": 0.0,
            "val_accuracy": float("nan"), "accuracy": float(np.mean(pred == test.y)),
            "dp_gap": dp_gap(pred, test.camera),
            "probe_auc_linear": probe_auc(train.x, train.camera, test.x, test.camera, "linear"),
            "probe_auc_mlp": probe_auc(train.x, train.camera, test.x, test.camera, "mlp"), "chosen": False}


def run(seed: int = 0, progress=None) -> Result:
    torch.set_num_threads(1)
    train = camera_embeddings(TRAIN, seed)
    val = camera_embeddings(VAL, seed + 1000)
    test = camera_embeddings(TEST, seed + 2000)
    plan = [("none", 0.0), ("moments", MOMENTS_LAMBDA)] + [("cf", lam) for lam in CF_LAMBDAS]
    rows = [_reference_row(train, test)]
    for penalty, lam in progress(plan, desc="heads", total=len(plan)) if progress else plan:
        head = fit_fair_head(train.x, train.y, train.camera, FairConfig(penalty=penalty, lam=lam, epochs=EPOCHS,
                                                                        sigma=SIGMA), seed)
        z_train, z_test = head.represent(train.x), head.represent(test.x)
        pred = (head.predict_proba(test.x) > 0.5).astype(np.int64)
        val_pred = (head.predict_proba(val.x) > 0.5).astype(np.int64)
        rows.append({"model": "head", "penalty": penalty, "lam": lam,
                     "val_accuracy": float(np.mean(val_pred == val.y)), "accuracy": float(np.mean(pred == test.y)),
                     "dp_gap": dp_gap(pred, test.camera),
                     "probe_auc_linear": probe_auc(z_train, train.camera, z_test, test.camera, "linear", seed),
                     "probe_auc_mlp": probe_auc(z_train, train.camera, z_test, test.camera, "mlp", seed),
                     "chosen": False})

    plain = next(r for r in rows if r["penalty"] == "none")
    cf_rows = [r for r in rows if r["penalty"] == "cf"]
    eligible = [r for r in cf_rows if r["val_accuracy"] >= plain["val_accuracy"] - VAL_TOLERANCE] or cf_rows[:1]
    chosen = max(eligible, key=lambda r: r["lam"])
    chosen["chosen"] = True
    moments = next(r for r in rows if r["penalty"] == "moments")
    figures = {"plain_accuracy": plain["accuracy"], "cf_accuracy": chosen["accuracy"], "cf_lambda": chosen["lam"],
               "plain_dp_gap": plain["dp_gap"], "cf_dp_gap": chosen["dp_gap"],
               "plain_probe_auc": plain["probe_auc_mlp"], "cf_probe_auc": chosen["probe_auc_mlp"],
               "cf_probe_auc_linear": chosen["probe_auc_linear"], "true_rate_gap": dp_gap(test.y, test.camera),
               "moments_accuracy": moments["accuracy"], "moments_dp_gap": moments["dp_gap"],
               "moments_probe_auc": moments["probe_auc_mlp"]}
    auc = max(chosen["probe_auc_mlp"], chosen["probe_auc_linear"])
    checks = {"probe_auc_falls_toward_half": auc <= 0.65 and plain["probe_auc_mlp"] - auc >= 0.2,
              "dp_gap_shrinks_by_a_third": chosen["dp_gap"] <= (2 / 3) * plain["dp_gap"],
              "accuracy_within_2_points": chosen["accuracy"] >= plain["accuracy"] - 0.02}
    notes = [f"lambda chosen on validation: {chosen['lam']:g} (strongest within {100 * VAL_TOLERANCE:.1f} points "
             "of the plain head's validation accuracy); every lambda is in the table.",
             "The cameras' true event rates differ (0.4 / 0.5 / 0.6), so a zero decision gap would cost accuracy; "
             "the gap that goes is the one a camera-aware model adds by using the camera as a prior.",
             "Synthetic embeddings (training/fairness/data.py): numbers are not a claim about real video."]
    return Result(rows, figures, checks, notes)


EXPERIMENT = Experiment(
    name="fairness",
    title="Characteristic-function fair representations",
    paper="Sinigaglia, Sartor, Ceccon, Susto, Simple and Effective Specialized Representations for Fair "
          "Classifiers, NeurIPS 2025 (arXiv 2505.11740)",
    claim="Matching the groups' empirical characteristic functions of the representation drives a probe's AUC "
          "for the camera toward 0.5 and shrinks the gap in positive rate, with accuracy within 2 points",
    run=run,
)
