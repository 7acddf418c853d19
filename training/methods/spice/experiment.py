"""SPiCE in miniature: a conformer-ensemble network against the same network on one conformer, three seeds.

RDKit's NCI sample gives small flexible molecules with 5 MMFF-relaxed ETKDG conformers each; target: the
Boltzmann average (MMFF energies, 298 K) of a per-conformer property, by default the radius of gyration.
The first 400 molecules are the development set every setting was chosen on (per seed: 300 train, 100
val); the next 160 are a held-out test set that no setting saw. Four models share one architecture
(1 PaiNN block + geometric MoE, C = 32, 4 experts top-2, upcycled after 5 of 15 epochs): on one random
conformer, on the lowest-energy conformer (an oracle that needs the energies), on all conformers without
the cross-conformer coupling (each conformer encoded alone, readouts averaged: the fair ensemble
baseline), and SPiCE (GIN over the conformer-averaged atoms + hierarchical attention). Headline: mean and
sd over seeds 0, 1, 2. Symmetry: each conformer rotated/reflected and translated on its own, conformers
shuffled. `python -m training.methods.spice.experiment --property dipole` runs the same comparison on another property.
"""

from __future__ import annotations

import argparse
import copy
import statistics

import torch

from training.methods.runner import Experiment, Result, format_result, progress_bar
from training.methods.spice.conformers import N_FEATURES, PROPERTIES, Ensembles, build
from training.methods.spice.model import Spice, SpiceConfig
from training.methods.spice.train import fit, predict, symmetry_error

MOLECULES, HELD_OUT, CONFORMERS, TRAIN = 400, 160, 5, 300
EPOCHS = 15
SEEDS = (0, 1, 2)
MODELS = (("random", "random", True, "single conformer (random)"),
          ("lowest", "lowest", True, "single conformer (lowest energy, oracle)"),
          ("uncoupled", "all", False, "all conformers, no coupling (readouts averaged)"),
          ("spice", "all", True, "SPiCE ensemble"))


def _model(seed: int, couple: bool = True) -> Spice:
    torch.manual_seed(seed)
    return Spice(SpiceConfig(N_FEATURES, channels=32, blocks=1, couple=couple))


def _symmetry(model: Spice, data: Ensembles, seed: int) -> dict[str, float]:
    """Worst relative error over prediction, scalars and vectors in float64, and the prediction's in float32."""
    err64 = symmetry_error(copy.deepcopy(model).double(), data, seed)
    return {"float64": max(err64.values()), "float32": symmetry_error(model, data, seed)["prediction"]}


def _mae(model: Spice, data: Ensembles, mode: str, seed: int) -> float:
    return float((predict(model, data, mode, seed) - data.target).abs().mean())


def mean_sd(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def compare(seeds: tuple[int, ...], progress, prop: str = "gyration", epochs: int = EPOCHS,
            molecules: int = MOLECULES, held_out: int = HELD_OUT, train_size: int = TRAIN) -> Result:
    """Train the four models per seed on `prop`; per-seed rows, a mean +- sd row per model, figures, checks."""
    torch.set_num_threads(1)
    data = build(molecules + held_out, CONFORMERS, progress=progress).for_property(prop)
    dev, test = data.subset(torch.arange(molecules)), data.subset(torch.arange(molecules, len(data)))
    rows, symmetry = [], {}
    for seed in seeds:
        perm = torch.randperm(len(dev), generator=torch.Generator().manual_seed(seed))
        train, val = dev.subset(perm[:train_size]), dev.subset(perm[train_size:])
        mean = float(train.target.mean())
        rows.append({"seed": seed, "model": "predict the training mean", "val MAE": float((val.target - mean).abs().mean()),
                     "test MAE": float((test.target - mean).abs().mean())})
        for key, mode, couple, label in MODELS:
            model = _model(seed, couple)
            if key == "spice" and seed == seeds[0]:
                symmetry["before"] = _symmetry(model, test.subset(torch.arange(32)), seed)
            fit(model, train, mode, epochs, seed, upcycle_at=epochs // 3, progress=progress)
            if key == "spice" and seed == seeds[0]:
                symmetry["after"] = _symmetry(model, test.subset(torch.arange(32)), seed)
            rows.append({"seed": seed, "model": label, "val MAE": _mae(model, val, mode, seed),
                         "test MAE": _mae(model, test, mode, seed)})
    summary = {}
    for label in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == label]
        (vm, vs), (tm, ts) = mean_sd([r["val MAE"] for r in mine]), mean_sd([r["test MAE"] for r in mine])
        summary[label] = {"seed": "mean +- sd", "model": label, "val MAE": vm, "val sd": vs, "test MAE": tm, "test sd": ts}
    floors = {"exact property of one random conformer (floor of single)":
              float((test.conformer_values - test.target[:, None]).abs().mean()),
              "exact mean over the conformers (floor of an unweighted mean)":
              float((test.conformer_values.mean(1) - test.target).abs().mean())}
    s = {k: summary[label] for k, _, _, label in MODELS}
    worst64 = max(v["float64"] for v in symmetry.values())
    figures = {f"test_mae_{k}": v["test MAE"] for k, v in s.items()} | {
        f"test_mae_{k}_sd": v["test sd"] for k, v in s.items()} | {
        "test_ratio_spice_over_single": s["spice"]["test MAE"] / s["random"]["test MAE"],
        "symmetry_error_float64": worst64, "symmetry_error_float32": symmetry["after"]["float32"]}

    def beyond(a: dict, b: dict) -> bool:  # a's test MAE below b's by more than both seed spreads
        return a["test MAE"] + a["test sd"] < b["test MAE"] - b["test sd"]

    checks = {"symmetry error < 1e-5 (float64: prediction, scalars, vectors; before and after training)": worst64 < 1e-5,
              "symmetry error of the trained float32 prediction < 1e-5": symmetry["after"]["float32"] < 1e-5,
              "SPiCE's test MAE below the single random conformer's beyond the seed spread": beyond(s["spice"], s["random"]),
              "SPiCE beats predicting the mean on every seed":
                  all(r["test MAE"] < m["test MAE"] for r, m in zip(
                      [r for r in rows if r["model"] == "SPiCE ensemble"],
                      [r for r in rows if r["model"] == "predict the training mean"], strict=True))}
    notes = [f"property: Boltzmann-averaged {prop}; per seed {train_size} train / {molecules - train_size} val of the "
             f"first {molecules} molecules; test: the next {len(test)}, never used to choose a setting; "
             f"{CONFORMERS} conformers, {epochs} epochs; seeds {list(seeds)}",
             "against the uncoupled ensemble and the lowest-energy oracle: "
             f"{'below' if beyond(s['spice'], s['uncoupled']) else 'not below'} the uncoupled ensemble and "
             f"{'below' if beyond(s['spice'], s['lowest']) else 'not below'} the oracle beyond the seed spread",
             f"test floors: {floors}", f"symmetry errors: {symmetry}"]
    return Result(list(summary.values()) + rows, figures, checks, notes, seeds=len(seeds))


def run(seed: int, progress) -> Result:
    """Seeds 0, 1, 2 (fixed); `seed` is the runner's and is not used."""
    return compare(SEEDS, progress)


EXPERIMENT = Experiment(
    name="spice",
    needs=("rdkit",),
    title="SPiCE: symmetry-preserving conformer ensemble network",
    paper="Zhu et al., Symmetry-Preserving Conformer Ensemble Networks for Molecular Representation Learning, "
          "NeurIPS 2025",
    claim="A network over the whole conformer ensemble, invariant to each conformer's rotation and to their "
          "order, predicts a Boltzmann-averaged property better than the same network on a single conformer "
          "(three seeds, on held-out molecules).",
    run=run,
)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.methods.spice.experiment", description=__doc__.splitlines()[0])
    p.add_argument("--property", choices=PROPERTIES, default="gyration")
    p.add_argument("--seed", type=int, action="append", help="a seed (repeat for several; default 0, 1, 2)")
    a = p.parse_args(argv)
    result = compare(tuple(a.seed) if a.seed else SEEDS, progress_bar(True), a.property)
    print(format_result(EXPERIMENT, result))
    return 0 if result.held else 1


if __name__ == "__main__":
    raise SystemExit(main())
