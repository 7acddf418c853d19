"""The safety knowledge base: PaSBench's 288 rules with reason and severity, and where its data lives.

The rules (`data/rules_severity.json`, MIT, from the PaSBench release) ship with the package. Trigger
and condition phrases are known only for the 128 rules of PaSBench's image track
(`data/rule_triggers.json`); they enrich those rules' text for retrieval. The evaluation logs are not
shipped: they are found through `pasbench_dir()`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

PACKAGE_DATA = Path(__file__).resolve().parent / "data"
SEVERITIES = ("critical", "warning", "info")
SEVERITY_WEIGHT = {"critical": 3.0, "warning": 2.0, "info": 1.0}


@dataclass(frozen=True)
class Rule:
    """One safety rule; `id` is its index in the knowledge base."""

    id: int
    knowledge: str
    reason: str
    severity: str
    condition: str = ""
    trigger: str = ""

    def text(self) -> str:
        """The text that retrieval matches against an observation log."""
        return " ".join(p for p in (self.knowledge, self.condition, self.trigger) if p)


def pasbench_dir(path: str | os.PathLike | None = None) -> Path:
    """The PaSBench data folder: `path`, else $FORESIGHT_PASBENCH_DIR, else `<repo>/../shared/data/pasbench`."""
    if path is not None:
        return Path(path)
    env = os.environ.get("FORESIGHT_PASBENCH_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2].parent / "shared" / "data" / "pasbench"


def _read_json_list(path: Path) -> list[dict]:
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(data, list) or not all(isinstance(x, dict) for x in data):
        raise ValueError(f"{path} must hold a JSON list of objects")
    return data


def normalise_rule_text(text: str) -> str:
    """Key used to match the same rule across files (whitespace and case differ between copies)."""
    return " ".join(text.split()).strip().rstrip(".").lower()


def load_rules(rules_file: str | os.PathLike | None = None,
               triggers_file: str | os.PathLike | None = None) -> list[Rule]:
    """Load the knowledge base; each record needs `safety_knowledge`, `risk_reason` and `severity`."""
    records = _read_json_list(Path(rules_file) if rules_file else PACKAGE_DATA / "rules_severity.json")
    extra: dict[str, dict] = {}
    tpath = Path(triggers_file) if triggers_file else PACKAGE_DATA / "rule_triggers.json"
    if tpath.is_file():
        for rec in _read_json_list(tpath):
            extra[normalise_rule_text(rec.get("safety_knowledge", ""))] = rec
    rules = []
    for i, rec in enumerate(records):
        missing = [k for k in ("safety_knowledge", "risk_reason", "severity") if not rec.get(k)]
        if missing:
            raise ValueError(f"rule {i} lacks {', '.join(missing)}")
        severity = str(rec["severity"]).strip().lower()
        if severity not in SEVERITIES:
            raise ValueError(f"rule {i} has unknown severity {rec['severity']!r}")
        knowledge = " ".join(str(rec["safety_knowledge"]).split())
        more = extra.get(normalise_rule_text(knowledge), {})
        rules.append(Rule(id=i, knowledge=knowledge, reason=" ".join(str(rec["risk_reason"]).split()),
                          severity=severity,
                          condition=" ".join(str(more.get("condition_or_scenario", "")).split()),
                          trigger=" ".join(str(more.get("risk_triggering_behavior", "")).split())))
    return rules


@dataclass(frozen=True)
class Scenario:
    """One PaSBench text scenario: the log and its ground truth."""

    log: str
    knowledge: str
    reason: str
    trigger: str
    condition: str


def load_scenarios(logs_file: str | os.PathLike | None = None) -> list[Scenario]:
    """Read a PaSBench text-log file (default: the development logs in `pasbench_dir()`)."""
    path = Path(logs_file) if logs_file else pasbench_dir() / "text_logs_dev.json"
    out = []
    for i, rec in enumerate(_read_json_list(path)):
        if not isinstance(rec.get("input"), str) or not isinstance(rec.get("safety_knowledge"), str):
            raise ValueError(f"{path}: record {i} needs string fields 'input' and 'safety_knowledge'")
        out.append(Scenario(log=rec["input"], knowledge=rec["safety_knowledge"],
                            reason=str(rec.get("risk_reason", "")),
                            trigger=str(rec.get("risk_triggering_behavior", "")),
                            condition=str(rec.get("condition_or_scenario", ""))))
    if not out:
        raise ValueError(f"{path} holds no scenarios")
    return out
