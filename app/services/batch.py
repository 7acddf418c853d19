"""Batch analysis of a folder: one Ray task per file, resumable through the SQLite store in OUTDIR.

A file whose content has a finished job under the same settings (`fingerprint`) is not analysed again, so a run
killed at any point (even with SIGKILL) and started again loses nothing and ends with the same outputs. Files with
identical content share one analysis (one job, keyed by the content's and the settings' hashes) but each keeps
its own result, whose `source` is its own path.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from app.services.jobs import JOB_TASK_OPTIONS, outcome, record_outcome
from models.errors import BadInput
from pipelines.media.sources import MEDIA_EXTENSIONS, content_hash
from pipelines.sinks.exporters import prepare_output, summary_row, summary_table, to_webvtt, write_json
from pipelines.sinks.store import Store
from pipelines.spine.inline import analyze_inline
from pipelines.spine.options import AnalyzeOptions

NAME_MAX = 255  # bytes in one file name on Linux file systems
LOCK = ".foresight-batch.lock"


def find_media(folder: Path) -> tuple[list[Path], dict[Path, str]]:
    """The media files under `folder` (symlinked folders are not followed), and the folders that could not be
    read, with the reason: their files are reported as not analysed, not skipped without a word."""
    files, unreadable = [], {}

    def refused(exc: OSError) -> None:
        unreadable[Path(exc.filename)] = exc.strerror or str(exc)

    for root, _, names in os.walk(folder, onerror=refused):
        files += [p for p in (Path(root) / n for n in names) if p.suffix.lower() in MEDIA_EXTENSIONS and p.is_file()]
    return sorted(files), unreadable


def shown(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 (kept by Python as lone surrogates, which SQLite and JSON
    files refuse) become U+FFFD."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def fingerprint(options: AnalyzeOptions, max_duration_s: float) -> str:
    """What of the options decides a file's result: a rerun with other settings (`--no-asr`, another detector, a
    higher `--max-duration`) analyses the files again instead of keeping results made under the old ones."""
    decisive = {"stages": asdict(options.stages), "grounding": asdict(options.grounding), "cap": max_duration_s,
                **{k: getattr(options, k) for k in ("sample_fps", "max_side", "duration_s")}}
    return hashlib.sha256(json.dumps(decisive, sort_keys=True, default=repr).encode()).hexdigest()


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
    """Analyse every media file under `folder` into `outdir`; BadInput for a bad folder or OUTDIR, or one that
    another batch holds. A file that cannot be read or analysed is a failed row, and the others go on."""
    folder, outdir = Path(folder), Path(outdir)
    if not folder.is_dir():
        raise BadInput(f"not a folder: {folder}")
    files, unreadable = find_media(folder)
    if not files and not unreadable:
        raise BadInput(f"no media files under {folder} (looked for {', '.join(sorted(MEDIA_EXTENSIONS))})")
    options = options or AnalyzeOptions()
    with _locked(outdir) as store:
        return _run(folder, outdir, store, files, unreadable, options, show_progress, max_parallel, max_duration_s)


@contextmanager
def _locked(outdir: Path) -> Iterator[Store]:
    """OUTDIR made, checked and held by this run alone (a second batch on it is refused at once, before either
    redoes the other's work), and its store open."""
    prepare_output(outdir, "--out", folder=True)
    with open(outdir / LOCK, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BadInput(f"another batch is writing to {outdir}; run this one when it has finished") from None
        try:
            store = Store(outdir / "foresight.db")
        except sqlite3.DatabaseError as exc:
            raise BadInput(f"{outdir / 'foresight.db'} is not a Foresight store ({exc})") from None
        try:
            yield store
        finally:
            store.close()


def _run(folder: Path, outdir: Path, store: Store, files: list[Path], unreadable: dict[Path, str],
         options: AnalyzeOptions, show_progress: bool, max_parallel: int | None, max_duration_s: float) -> BatchReport:
    import ray
    from tqdm import tqdm

    from pipelines.spine.runtime import ensure_ray

    names = {p: str(p.relative_to(folder)) for p in files}
    settings = fingerprint(options, max_duration_s)
    keys = {}
    for p in files:
        try:  # one job per content and settings
            keys[p] = hashlib.sha256(f"{content_hash(p)}:{settings}".encode()).hexdigest()
        except OSError as exc:
            unreadable[p] = exc.strerror or str(exc)

    todo, skipped, copies = [], 0, {}
    for p in (p for p in files if p in keys):
        copies.setdefault(keys[p], []).append(p)
        job = store.job_by_key(keys[p])
        if job and job["status"] == "done":
            skipped += 1
        elif len(copies[keys[p]]) == 1:  # one analysis per content; its copies get the result too
            if job is None:
                store.create_job("batch", shown(names[p]), key=keys[p], job_id=keys[p][:32])
            store.update_job(keys[p][:32], status="running")
            todo.append(p)

    bar = tqdm(total=len(files), initial=skipped, unit="file", desc="batch", file=sys.stderr,
               disable=not show_progress)
    for p, reason in unreadable.items():
        bar.write(f"failed: {shown(str(p.relative_to(folder)))}: cannot read it ({reason})")
    written: dict[Path, str] = {}  # a file whose result could not be written out -> why
    if todo:
        ensure_ray()
        task = ray.remote(**JOB_TASK_OPTIONS)(_task)
        pending = {}
        queue = list(todo)
        limit = max_parallel or max(1, int(ray.available_resources().get("CPU", 1)))
        while queue or pending:
            while queue and len(pending) < limit:
                p = queue.pop(0)
                index = _indexing(options, outdir / "foresight.db", shown(names[p]))
                pending[task.remote(str(p), index, max_duration_s)] = p
            ready, _ = ray.wait(list(pending), num_returns=1)
            p = pending.pop(ready[0])
            job_id = keys[p][:32]
            try:
                result, error = ray.get(ready[0])
            except ray.exceptions.RayError as exc:
                result, error = None, f"worker failed: {type(exc).__name__}"
            if result is not None:
                result["source"] = shown(names[p])
            record_outcome(store, job_id, result, error)
            for q in copies[keys[p]]:
                if result is not None:
                    _write_file_outputs(outdir, names[q], {**result, "source": shown(names[q])}, written, q)
                    for warning in (result.get("ingest") or {}).get("warnings", []):
                        bar.write(f"warning: {shown(names[q])}: {warning}")
                else:
                    bar.write(f"failed: {shown(names[q])}: {error}")
                bar.update(1)
    bar.close()

    rows, done, failed, written = [], 0, 0, {}  # the outputs are written again below: that try decides
    with open(outdir / "results.jsonl.tmp", "w") as jsonl:
        for p in sorted(set(files) | set(unreadable)):
            name = shown(str(p.relative_to(folder)))
            job = store.job_by_key(keys[p]) if p in keys else None
            result = json.loads(job["result_json"]) if job and job["status"] == "done" else None
            error = job["error"] if job else f"cannot read it ({unreadable.get(p)})"
            if result is not None:
                result["source"] = name  # copies share the analysis, not the name
                done += 1
                jsonl.write(json.dumps(result, ensure_ascii=False) + "\n")
                _write_file_outputs(outdir, names[p], result, written, p)  # idempotent; restores files lost with a kill
            if p in written:
                result, error = None, f"analysed (its result is in results.jsonl) but its files were not written: {written[p]}"
                done -= 1
            if result is None:
                failed += 1
            rows.append(summary_row(name, result, error))
    (outdir / "results.jsonl.tmp").replace(outdir / "results.jsonl")
    (outdir / "summary.md").write_text(summary_table(rows))
    return BatchReport(done=done, skipped=skipped, failed=failed, rows=rows)


def _write_file_outputs(outdir: Path, name: str, result: dict, failures: dict[Path, str], key: Path) -> None:
    """`<name>.json` and `<name>.vtt` beside where the file sits in the input tree; what stops them (a full disk,
    a folder in the way) goes into `failures` under `key`, and the batch goes on."""
    base = outdir / name
    base = base.with_name(_fitting(base.name))
    vtt = base.with_name(base.name + ".vtt")
    tmp = vtt.with_suffix(".vtt.tmp")
    try:
        base.parent.mkdir(parents=True, exist_ok=True)
        write_json(base.with_name(base.name + ".json"), result)
        tmp.write_text(to_webvtt(result.get("transcript", [])))
        tmp.replace(vtt)
    except OSError as exc:
        failures[key] = exc.strerror or str(exc)
        tmp.unlink(missing_ok=True)


def _fitting(name: str) -> str:
    """`name`, cut (with a hash of the whole, so two long names stay apart) where `<name>.json.tmp` would pass the
    file system's limit on a name."""
    room = NAME_MAX - len(".json.tmp")
    raw = os.fsencode(name)
    if len(raw) <= room:
        return name
    tag = "~" + hashlib.sha256(raw).hexdigest()[:8]
    return os.fsdecode(raw[:room - len(tag)]) + tag
