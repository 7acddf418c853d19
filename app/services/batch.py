"""Batch analysis of a folder: one Ray task per file, resumable through the SQLite store in OUTDIR.

A file whose content hash already has a finished job is not analyzed again, so a run killed at any point
(even with SIGKILL) and started again loses nothing and ends with the same outputs. Files with identical
content share one analysis (one job, keyed by the hash) but each keeps its own result, whose `source` is its
own path.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from app.services.jobs import JOB_TASK_OPTIONS, outcome, record_outcome
from models.errors import BadInput
from pipelines.media.sources import MEDIA_EXTENSIONS, content_hash
from pipelines.sinks.exporters import summary_row, summary_table, to_webvtt, write_json
from pipelines.sinks.store import Store
from pipelines.spine.inline import analyze_inline
from pipelines.spine.options import AnalyzeOptions


def find_media(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in MEDIA_EXTENSIONS)


def _indexing(options: AnalyzeOptions, db: Path, name: str) -> AnalyzeOptions:
    """With a grounding model available, each file's per-second features also go into the store's grounding
    index, so `foresight serve --db OUTDIR/foresight.db` can ground queries over the whole batch."""
    from dataclasses import replace

    from models.trisense import SHIPPED_CHECKPOINT

    checkpoint = options.grounding.checkpoint or (str(SHIPPED_CHECKPOINT) if SHIPPED_CHECKPOINT.is_file() else None)
    if checkpoint is None:
        return options
    return replace(options, grounding=replace(options.grounding, checkpoint=checkpoint, index_db=str(db),
                                              index_source=name))


def _task(path: str, options: AnalyzeOptions, max_duration_s: float) -> tuple[dict | None, str | None]:
    """Ray task body: a bad file, or one declaring more than `max_duration_s`, is a reported failure, not a crash
    of the batch."""
    from app.services.uploads import capped, media_within

    def analyse() -> dict:
        media_within(Path(path), max_duration_s, "--max-duration")
        return analyze_inline(path, capped(options, max_duration_s))

    return outcome(analyse)


@dataclass
class BatchReport:
    done: int
    skipped: int
    failed: int
    rows: list[dict]


def run_batch(folder: str | Path, outdir: str | Path, options: AnalyzeOptions | None = None,
              show_progress: bool = True, max_parallel: int | None = None,
              max_duration_s: float = 3600.0) -> BatchReport:
    import ray
    from tqdm import tqdm

    from pipelines.spine.runtime import ensure_ray

    folder, outdir = Path(folder), Path(outdir)
    if not folder.is_dir():
        raise BadInput(f"not a folder: {folder}")
    files = find_media(folder)
    if not files:
        raise BadInput(f"no media files under {folder} (looked for {', '.join(sorted(MEDIA_EXTENSIONS))})")
    outdir.mkdir(parents=True, exist_ok=True)
    options = options or AnalyzeOptions()
    store = Store(outdir / "foresight.db")
    names = {p: str(p.relative_to(folder)) for p in files}
    keys = {p: content_hash(p) for p in files}

    todo, skipped, copies = [], 0, {}
    for p in files:
        copies.setdefault(keys[p], []).append(p)
        job = store.job_by_key(keys[p])
        if job and job["status"] == "done":
            skipped += 1
        elif len(copies[keys[p]]) == 1:  # one analysis per content; its copies get the result too
            if job is None:
                store.create_job("batch", names[p], key=keys[p], job_id=keys[p][:32])
            store.update_job(keys[p][:32], status="running")
            todo.append(p)

    if todo:
        ensure_ray()
        task = ray.remote(**JOB_TASK_OPTIONS)(_task)
        pending = {}
        queue = list(todo)
        limit = max_parallel or max(1, int(ray.available_resources().get("CPU", 1)))
        bar = tqdm(total=len(files), initial=skipped, unit="file", desc="batch", file=sys.stderr,
                   disable=not show_progress)
        while queue or pending:
            while queue and len(pending) < limit:
                p = queue.pop(0)
                pending[task.remote(str(p), _indexing(options, outdir / "foresight.db", names[p]), max_duration_s)] = p
            ready, _ = ray.wait(list(pending), num_returns=1)
            p = pending.pop(ready[0])
            job_id = keys[p][:32]
            try:
                result, error = ray.get(ready[0])
            except ray.exceptions.RayError as exc:
                result, error = None, f"worker failed: {type(exc).__name__}"
            if result is not None:
                result["source"] = names[p]
            record_outcome(store, job_id, result, error)
            for q in copies[keys[p]]:
                if result is not None:
                    _write_file_outputs(outdir, names[q], {**result, "source": names[q]})
                    for warning in (result.get("ingest") or {}).get("warnings", []):
                        bar.write(f"warning: {names[q]}: {warning}")
                else:
                    bar.write(f"failed: {names[q]}: {error}")
                bar.update(1)
        bar.close()

    rows, done, failed = [], 0, 0
    with open(outdir / "results.jsonl.tmp", "w") as jsonl:
        for p in files:
            job = store.job_by_key(keys[p])
            result = json.loads(job["result_json"]) if job and job["status"] == "done" else None
            if result is not None:
                result["source"] = names[p]  # copies share the analysis, not the name
                done += 1
                _write_file_outputs(outdir, names[p], result)  # idempotent; restores files lost with a kill
                jsonl.write(json.dumps(result, ensure_ascii=False) + "\n")
            else:
                failed += 1
            rows.append(summary_row(names[p], result, job["error"] if job else None))
    (outdir / "results.jsonl.tmp").replace(outdir / "results.jsonl")
    (outdir / "summary.md").write_text(summary_table(rows))
    store.close()
    return BatchReport(done=done, skipped=skipped, failed=failed, rows=rows)


def _write_file_outputs(outdir: Path, name: str, result: dict) -> None:
    base = outdir / name
    base.parent.mkdir(parents=True, exist_ok=True)
    write_json(base.with_name(base.name + ".json"), result)
    vtt = base.with_name(base.name + ".vtt")
    tmp = vtt.with_suffix(".vtt.tmp")
    tmp.write_text(to_webvtt(result.get("transcript", [])))
    tmp.replace(vtt)
