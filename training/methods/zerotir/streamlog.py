"""What the agent's programs read: a stream's stored events and transcript, from a result or the store.

Foresight keeps both in two places: the result JSON (`events` and `transcript` lists of the result schema
in docs/design) and the SQLite store (`pipelines.sinks.store.Store`, rows per job). This adapter reads either
through its public surface only, so the agent does not depend on how the store is laid out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STORE_SUFFIXES = (".db", ".sqlite", ".sqlite3")


@dataclass(frozen=True)
class StreamLog:
    """Events (label, modality, start, end, confidence) and transcript lines (start, end, text), in
    time order: the variables `events` and `transcript` a program sees."""

    source: str
    events: tuple[dict[str, Any], ...]
    transcript: tuple[dict[str, Any], ...]

    @property
    def labels(self) -> list[str]:
        """Distinct event labels in order of first appearance."""
        return list(dict.fromkeys(e["label"] for e in self.events))

    def inputs(self) -> dict[str, Any]:
        """The JSON-ready variables bound in the sandbox."""
        return {"events": [dict(e) for e in self.events], "transcript": [dict(t) for t in self.transcript]}


def _event(row: dict[str, Any]) -> dict[str, Any]:
    return {"label": str(row["label"]), "modality": str(row.get("modality", "")),
            "start": float(row["start"]), "end": float(row["end"]),
            "confidence": float(row.get("confidence", 1.0))}


def _line(row: dict[str, Any]) -> dict[str, Any]:
    return {"start": float(row["start"]), "end": float(row["end"]), "text": str(row["text"]).strip()}


def from_rows(source: str, events: list[dict[str, Any]], transcript: list[dict[str, Any]]) -> StreamLog:
    """Normalise rows (extra keys such as per-word timings or row ids dropped) and sort them by time."""
    evs = sorted((_event(e) for e in events), key=lambda e: (e["start"], e["end"]))
    lines = sorted((_line(t) for t in transcript if str(t.get("text", "")).strip()),
                   key=lambda t: (t["start"], t["end"]))
    return StreamLog(source, tuple(evs), tuple(lines))


def from_result(result: dict[str, Any]) -> StreamLog:
    """A result document (CLI `--out`, REST result, batch line)."""
    if not isinstance(result.get("events", []), list) or not isinstance(result.get("transcript", []), list):
        raise ValueError("a result needs `events` and `transcript` lists")
    return from_rows(str(result.get("source", "")), result.get("events", []), result.get("transcript", []))


def from_store(path: str | Path, job_id: str) -> StreamLog:
    """One job's rows from the SQLite store, read through `Store.rows` (live jobs append rows before
    they have a result, so rows are the fuller view)."""
    from pipelines.sinks.store import Store

    store = Store(path)
    try:
        job = store.job(job_id)
        if job is None:
            raise ValueError(f"no job {job_id!r} in {path}")
        return from_rows(str(job.get("source", "")), store.rows("events", job_id), store.rows("transcript", job_id))
    finally:
        store.close()


def load(path: str | Path, job_id: str | None = None) -> StreamLog:
    """A result JSON file, or a store file (`.db`, `.sqlite`, `.sqlite3`) with the job to read."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    if path.suffix in STORE_SUFFIXES:
        if not job_id:
            raise ValueError("reading the store needs a job id (--job)")
        return from_store(path, job_id)
    try:
        return from_result(json.loads(path.read_text()))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not a result JSON: {exc}") from exc
