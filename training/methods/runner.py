"""The one runner of the method packages: the contract each keeps, and how Foresight finds and runs them.

A method package `training/methods/<name>/` holds an `experiment.py` whose module-level `EXPERIMENT` is an
`Experiment`: a miniature reproduction of the *direction* of its paper's claim. `foresight train <name>`
runs one; `foresight eval training` runs them all and says, per method, whether the direction held.
Packages are found by looking for `training/methods/*/experiment.py`, so adding a method touches no shared file.
The training of Foresight's own models (PreFM, the grounder, corpora, perception, safety) lives beside
`training/methods/`, not in it.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

METHODS_DIR = Path(__file__).resolve().parent


@dataclass
class Result:
    """What one run of an experiment measured.

    rows: the table (one dict per row, same keys); figures: the headline numbers by name;
    checks: each part of the claim's direction by name, True where it held; seeds: how many seeds the
    figures average over. A figure `<name>_sd` is the sd over those seeds of figure `<name>`.
    """

    rows: list[dict[str, Any]]
    figures: dict[str, float]
    checks: dict[str, bool]
    notes: list[str] = field(default_factory=list)
    seeds: int = 1

    @property
    def held(self) -> bool:
        return bool(self.checks) and all(self.checks.values())

    def to_json(self) -> dict[str, Any]:
        return {"rows": self.rows, "figures": self.figures, "checks": self.checks, "held": self.held,
                "notes": self.notes, "seeds": self.seeds}

    def spread(self) -> dict[str, dict[str, float | None]]:
        """Each headline figure as {"mean", "sd"}, its `_sd` companion folded in (sd None where there is none)."""
        return {k: {"mean": v, "sd": self.figures.get(f"{k}_sd")} for k, v in self.figures.items()
                if not (k.endswith("_sd") and k[:-3] in self.figures)}


@dataclass(frozen=True)
class Experiment:
    """A method's miniature experiment.

    run(seed, progress) does the work; `progress(iterable, desc=..., total=...)` wraps its loops so the
    command line shows a bar and tests stay quiet.
    """

    name: str
    title: str
    paper: str
    claim: str
    run: Callable[..., Result]
    needs: tuple[str, ...] = ()  # modules of the `methods` extra it imports (requirements-methods.txt)


def progress_bar(enabled: bool) -> Callable[..., Iterator]:
    """A tqdm wrapper on stderr when enabled, a pass-through otherwise."""

    def wrap(iterable: Iterable, desc: str = "", total: int | None = None) -> Iterator:
        return iter(tqdm(iterable, desc=desc, total=total, disable=not enabled, leave=False, dynamic_ncols=True))

    return wrap


def method_names() -> list[str]:
    """Every `training/methods/<name>/` that carries an `experiment.py`, sorted."""
    return sorted(p.parent.name for p in METHODS_DIR.glob("*/experiment.py") if not p.parent.name.startswith("_"))


def load(name: str) -> Experiment:
    if name not in method_names():
        raise KeyError(f"no training method {name!r}; known: {', '.join(method_names()) or 'none'}")
    module = importlib.import_module(f"training.methods.{name}.experiment")
    exp = module.EXPERIMENT
    if not isinstance(exp, Experiment):
        raise TypeError(f"training.methods.{name}.experiment.EXPERIMENT is not an Experiment")
    missing = [m for m in exp.needs if importlib.util.find_spec(m) is None]
    if missing:
        from models.errors import BadInput

        raise BadInput(f"training method {name} needs {', '.join(missing)}, the methods extra: "
                       "pip install -r requirements-methods.txt (or pip install -e '.[methods]')")
    return exp


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e5):
            return f"{value:.3e}"
        return f"{value:.4f}".rstrip("0").rstrip(".") if abs(value) < 10 else f"{value:.2f}"
    return str(value)


def format_table(rows: list[dict[str, Any]]) -> str:
    """A plain-text table with a header row, columns padded to their widest cell."""
    if not rows:
        return "(no rows)"
    keys = list(rows[0])
    for row in rows[1:]:
        keys += [k for k in row if k not in keys]
    cells = [[str(k) for k in keys]] + [[_cell(row.get(k, "")) for k in keys] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(keys))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_result(exp: Experiment, result: Result) -> str:
    checks = "\n".join(f"  [{'held' if ok else 'NOT HELD'}] {name}" for name, ok in result.checks.items())
    out = [f"{exp.title} ({exp.paper})", f"claim: {exp.claim}", "", format_table(result.rows), "",
           "direction:", checks, f"overall: {'held' if result.held else 'NOT HELD'}"]
    out += [f"note: {n}" for n in result.notes]
    return "\n".join(out)


def write_json(path: Path, exp: Experiment, result: Result, seed: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"method": exp.name, "title": exp.title, "paper": exp.paper, "claim": exp.claim, "seed": seed,
           **result.to_json()}
    path.write_text(json.dumps(doc, indent=2, allow_nan=True) + "\n")
