"""Search over everything stored: text matching of a query against transcripts and event labels.

The scoring is `models.trisense.baselines.TextMatchBaseline`'s (MiniLM cosine similarity between the query and
each transcript segment or event label), applied across every finished job, and it is named `text-match` in
responses so nobody mistakes it for the learned grounder. When a TriSense checkpoint is configured and the
store holds its grounding index, sources in that index are also searched with the `Grounder` (`trisense`).
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from pipelines.sinks.store import Store

MODALITY_KINDS = ("speech", "audio", "visual", "audio-visual")  # other candidate kinds are weighted as visual


def candidates_from_result(result: dict, job_id: str | None = None) -> list[dict]:
    """One candidate per transcript segment and per event of a result."""
    out = [{"job_id": job_id, "source": result.get("source"), "text": t["text"].strip(), "kind": "speech",
            "start": float(t["start"]), "end": float(t["end"])}
           for t in result.get("transcript", []) if str(t.get("text", "")).strip()]
    out += [{"job_id": job_id, "source": result.get("source"), "text": e["label"], "kind": e["modality"],
             "start": float(e["start"]), "end": float(e["end"])}
            for e in result.get("events", []) if e.get("label")]
    return out


def candidates_from_store(store: Store, job_ids: list[str] | None = None) -> list[dict]:
    """Candidates from the stored rows of every job (finished uploads and live streams alike)."""
    speech, events = store.text_rows(job_ids)
    out = [{"job_id": r[0], "source": r[1], "text": r[2].strip(), "kind": "speech", "start": r[3], "end": r[4]}
           for r in speech if r[2].strip()]
    out += [{"job_id": r[0], "source": r[1], "text": r[2], "kind": r[3], "start": r[4], "end": r[5]} for r in events]
    return out


class TextMatcher:
    """Ranks candidates from many jobs with the text-match baseline's scores (the encoder loads once per
    process), keeping the best hit among overlapping ones of the same job and modality, and among those of one
    job with the very same span (a transcript line and an event label of one moment are one hit, not two)."""

    _lock = threading.Lock()

    @classmethod
    def encoder(cls):
        from models.sentences import shared_encoder

        with cls._lock:
            return shared_encoder()

    def rank(self, query: str, candidates: list[dict], top_k: int = 5) -> list[dict]:
        from models.trisense.baselines import TextMatchBaseline, modality_weights

        if not query.strip():
            raise ValueError("query must be a non-empty string")
        if not candidates:
            return []
        scores = TextMatchBaseline(self.encoder()).similarities(query, [c["text"] for c in candidates])
        hits = []
        for i in np.argsort(-scores, kind="stable"):
            c = candidates[int(i)]
            if any(h["job_id"] == c["job_id"] and h["start"] < c["end"] and c["start"] < h["end"]
                   and (h["kind"] == c["kind"] or (h["start"], h["end"]) == (c["start"], c["end"])) for h in hits):
                continue  # temporal NMS within one job and modality; one hit per span of a job, whatever its kind
            hits.append({**c, "score": round(float(np.clip(scores[i], 0.0, 1.0)), 4),
                         "modality_weights": modality_weights(c["kind"] if c["kind"] in MODALITY_KINDS else "visual")})
            if len(hits) >= top_k:
                break
        return hits


class SearchService:
    """`search(query)` over the store; `grounder_checkpoint` adds the learned grounder where features exist."""

    def __init__(self, store: Store, grounder_checkpoint: Path | None = None):
        self.store = store
        self.matcher = TextMatcher()
        self.index = None
        if grounder_checkpoint is not None:
            from models.trisense.grounder import Grounder
            from pipelines.sinks.grounding_index import GroundingIndex

            if not Path(grounder_checkpoint).is_file():
                raise FileNotFoundError(f"no grounder checkpoint at {grounder_checkpoint}")
            self.index = GroundingIndex(store, Grounder.from_pretrained(grounder_checkpoint))

    def search(self, query: str, top_k: int = 5, job_ids: list[str] | None = None) -> dict:
        """Text-match hits, plus the grounder's over the indexed sources; `job_ids` (None: every job) restricts
        both to those jobs, matched exactly, so an unknown id matches nothing."""
        hits = [{**h, "method": "text-match"}
                for h in self.matcher.rank(query, candidates_from_store(self.store, job_ids), top_k)]
        methods = ["text-match"]
        sources = self.index.source_ids() if self.index is not None else []
        if job_ids is not None:
            sources = indexed_sources_of(self.store, job_ids, sources)
        if sources:
            methods.append("trisense")
            grounded = self.index.search(query, top_k, source_ids=sources)
            threshold = self.index.grounder.threshold
            best = grounded[0].moment.score if grounded else 0.0
            if threshold is not None:  # the calibrated abstention: below it the grounder found nothing
                grounded = [h for h in grounded if h.moment.score >= threshold]
            verdict = {"found": bool(grounded), "best_score": round(float(best), 4),
                       "threshold": None if threshold is None else round(float(threshold), 4)}
            owners = self.store.grounding_owners(h.source_id for h in grounded)
            for hit in grounded:
                d = hit.to_dict()
                hits.append({"job_id": owners.get(d["source_id"]), "source": d["source_id"], "text": None,
                             "kind": "grounded", "start": d["start"], "end": d["end"], "score": d["score"],
                             "modality_weights": d["modality_weights"], "method": "trisense"})
            hits = sorted(hits, key=lambda h: -h["score"])[:top_k]
            return {"query": query.strip(), "method": "+".join(methods), "moments": hits, "trisense": verdict}
        return {"query": query.strip(), "method": "+".join(methods), "moments": hits}


def indexed_sources_of(store: Store, job_ids: list[str], indexed: list[str]) -> list[str]:
    """The indexed sources of exactly these jobs: an upload's clip is indexed as `<name>#<first 8 of its id>`
    and a batch file under its name, and a source counts only if its owner (`Store.grounding_owners`) is the
    job asked for, so an id that shares another job's first characters, or a name, matches nothing."""
    wanted = set(job_ids)
    candidates = set()
    for job in filter(None, map(store.job, wanted)):
        candidates.add(f"{job['source']}#{job['id'][:8]}" if job["kind"] == "upload" else job["source"])
    owners = store.grounding_owners(sorted(candidates & set(indexed)))
    return sorted(sid for sid, job in owners.items() if job in wanted)
