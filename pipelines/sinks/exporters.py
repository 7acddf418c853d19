"""Writers for batch outputs and downloads: per-file JSON, WebVTT and CSV, a JSONL of all results, and a summary table."""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from pathlib import Path

from models.errors import BadInput


def _vtt_time(t: float) -> str:
    ms = int(round(t * 1000))
    h, rem = divmod(ms, 3_600_000)
    m, rem = divmod(rem, 60_000)
    s, ms = divmod(rem, 1000)
    return f"{h:02d}:{m:02d}:{s:02d}.{ms:03d}"


def to_webvtt(transcript: list[dict]) -> str:
    lines = ["WEBVTT", ""]
    for i, cue in enumerate(transcript, 1):
        end = max(cue["end"], cue["start"] + 0.01)
        lines += [str(i), f"{_vtt_time(cue['start'])} --> {_vtt_time(end)}", cue["text"].replace("-->", "->"), ""]
    return "\n".join(lines)


def write_json(path: Path, result: dict) -> None:
    """Atomically for files (a killed run never leaves half a file); straight into anything else that exists
    (`/dev/null`, `/dev/stdout`, a pipe), which a rename would replace with a regular file."""
    text = json.dumps(result, indent=2, ensure_ascii=False)
    if path.exists() and not path.is_file():
        with open(path, "w") as fh:
            fh.write(text)
        return
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        tmp.write_text(text)
        tmp.replace(path)
    except OSError:  # a full or read-only disk: no 0-byte or half `.tmp` is left behind
        tmp.unlink(missing_ok=True)
        raise


def summary_row(name: str, result: dict | None, error: str | None) -> dict:
    """One file's row of a batch's `summary.md`; `warnings` are its analysis' own (a file cut short, decoding
    stopped early, the duration limit), so a file analysed in part is not read as a whole one."""
    if result is None:
        return {"file": name, "status": "failed", "duration_s": "", "events": "", "transcript_words": "",
                "alerts": "", "realtime_factor": "", "error": error or "", "warnings": ""}
    words = sum(len(t["text"].split()) for t in result.get("transcript", []))
    return {"file": name, "status": "done", "duration_s": result.get("duration_s"),
            "events": len(result.get("events", [])), "transcript_words": words,
            "alerts": len(result.get("alerts", [])),
            "realtime_factor": result.get("timings", {}).get("realtime_factor"), "error": "",
            "warnings": "; ".join((result.get("ingest") or {}).get("warnings", []))}


def summary_table(rows: list[dict]) -> str:
    """A Markdown table, readable in a terminal and on GitHub."""
    if not rows:
        return "(no files)\n"
    cols = list(rows[0])
    out = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    out += ["| " + " | ".join(" ".join(str(r[c]).split()).replace("|", "\\|") for c in cols) + " |" for r in rows]
    return "\n".join(out) + "\n"


def to_csv(result: dict) -> str:
    """Events, transcript lines and alerts of one result as CSV rows `kind,start,end,label,modality,score`, in
    time order (spreadsheets and log tools read it as it is)."""
    rows = [("event", e["start"], e["end"], e["label"], e.get("modality", ""), e.get("confidence", ""))
            for e in result.get("events", [])]
    rows += [("speech", t["start"], t["end"], t["text"], "speech", "") for t in result.get("transcript", [])]
    rows += [("alert", a["time"], a["time"], f"{a.get('rule', '')}: {a.get('reason', '')}", a.get("severity", ""),
              a.get("lead_time_s") if a.get("lead_time_s") is not None else "")
             for a in result.get("alerts", [])]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["kind", "start", "end", "label", "modality", "score"])
    writer.writerows(sorted(rows, key=lambda r: (float(r[1]), r[0])))
    return out.getvalue()


def check_writable_dir(folder: Path, flag: str) -> None:
    """Create and remove a probe file in `folder`; BadInput when that fails (read-only, full, no permission)."""
    if not folder.is_dir():
        raise BadInput(f"{flag} folder {folder} does not exist")
    try:
        fd, probe = tempfile.mkstemp(prefix=".foresight-probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise BadInput(f"{flag} folder {folder} is not writable ({exc.strerror or exc})") from None


def prepare_output(path: str | Path, flag: str = "--out", folder: bool = False) -> Path:
    """The output `path` (a file, or a `folder`) made ready before long work, not found bad after it: BadInput for
    an empty path, a file where a folder is wanted or the other way round, or a place it cannot write."""
    if not str(path).strip():
        raise BadInput(f"{flag} is empty (name a {'folder' if folder else 'file'})")
    path = Path(path)
    target = path if folder else path.parent
    if path.exists() and path.is_dir() != folder:
        raise BadInput(f"{flag} {path} is {'not a folder' if folder else 'a directory'}")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"cannot make the folder of {flag} {path} ({exc.strerror or exc})") from None
    check_writable_dir(target, flag)
    return path
