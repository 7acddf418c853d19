"""The human-readable summary `foresight analyze` prints."""

from __future__ import annotations


def _ts(t: float) -> str:
    m, s = divmod(max(t, 0.0), 60)
    return f"{int(m):02d}:{s:04.1f}"


def render_summary(result: dict, max_events: int = 25) -> str:
    lines = []
    dur = result.get("duration_s") or 0.0
    av = "audio+video" if result.get("has_video") and result.get("has_audio") else (
        "video only" if result.get("has_video") else "audio only")
    timings = result.get("timings", {})
    lines.append(f"{result.get('source')}  {dur:.1f} s, {av}; analyzed in {timings.get('wall_s', 0):.1f} s "
                 f"({timings.get('realtime_factor') or 0:.1f}x real time)")
    stages = sorted(((k[:-2], v) for k, v in (timings.get("stages") or {}).items() if v >= 0.05), key=lambda kv: -kv[1])
    if stages:
        lines.append("time in: " + ", ".join(f"{name} {v:.1f} s" for name, v in stages[:6]))
    ingest = result.get("ingest") or {}
    if ingest.get("reconnects") or ingest.get("frames_dropped") or ingest.get("lost_seconds"):
        lines.append(f"stream: {ingest.get('reconnects', 0)} reconnects, {ingest.get('lost_seconds', 0):.1f} s lost, "
                     f"{ingest.get('frames_dropped', 0)} frames dropped")
    until, errors = ingest.get("analysed_until"), ingest.get("decode_errors") or 0
    if until is not None and dur and until < dur - 1.0 and not ingest.get("lost_seconds"):
        lines.append(f"incomplete: only the first {until:.1f} s of {dur:.1f} s could be analysed"
                     + (f" ({errors} undecodable packets)" if errors else ""))
    elif errors:
        lines.append(f"warning: {errors} packets could not be decoded and were skipped")
    for w in ingest.get("warnings", []):
        lines.append(f"warning: {w}")
    events = result.get("events", [])
    lines.append(f"\nEvents ({len(events)}):")
    for e in events[:max_events]:
        by = f", {e['source']}" if e.get("source") else ""
        lines.append(f"  {_ts(e['start'])}-{_ts(e['end'])}  {e['modality']:<12} {e.get('name') or e['label']}  "
                     f"({e['confidence']:.2f}{by})")
    if len(events) > max_events:
        lines.append(f"  ... {len(events) - max_events} more in the JSON output")
    transcript = result.get("transcript", [])
    lines.append(f"\nTranscript ({len(transcript)} segments):")
    for t in transcript[:max_events]:
        lines.append(f"  {_ts(t['start'])}-{_ts(t['end'])}  {t['text']}")
    for a in result.get("answers", []):
        if not a["found"]:
            held = f" < threshold {a['threshold']:.2f}" if a.get("threshold") is not None else ""
            lines.append(f"\nQuery {a['query']!r}: not found (best score {a['best_score']:.2f}{held})")
    if result.get("moments"):
        lines.append(f"\nMoments ({len(result['moments'])}):")
        for m in result["moments"]:
            w = ", ".join(f"{k} {v:.2f}" for k, v in m.get("modality_weights", {}).items())
            lines.append(f"  {_ts(m['start'])}-{_ts(m['end'])}  {m['query']!r}  score {m['score']:.2f}  [{w}]")
    if result.get("alerts"):
        lines.append(f"\nAlerts ({len(result['alerts'])}):")
        for a in result["alerts"]:
            lines.append(f"  {_ts(a['time'])}  {a['severity'].upper():<8} {a['rule']}: {a['reason']}")
    lines.extend(tracking_lines(result))
    return "\n".join(lines)


def unique_objects(result: dict) -> dict[str, int]:
    """Objects per class counted once each (unique track ids), not boxes per frame; a long live stream's result
    lists its newest tracks and counts the others in `dropped.tracks`."""
    counts: dict[str, int] = dict((result.get("dropped") or {}).get("tracks") or {})
    for track in result.get("tracks") or []:
        counts[track["label"]] = counts.get(track["label"], 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def tracking_lines(result: dict) -> list[str]:
    """The tracking part of the summary: unique objects, crossings per line and direction, zone events."""
    if result.get("tracks") is None:
        return []
    counts = unique_objects(result)
    lines = [f"\nObjects tracked ({sum(counts.values())}): "
             + (", ".join(f"{n} {label}" for label, n in counts.items()) or "none")]
    per_line: dict[tuple[str, str], int] = {}
    for c in result.get("crossings", []):
        per_line[(c["line"], c["direction"])] = per_line.get((c["line"], c["direction"]), 0) + 1
    for (name, direction), n in sorted(per_line.items()):
        lines.append(f"  line {name}: {n} crossed {direction.replace('_', ' ')}")
    for z in result.get("zone_events", [])[:25]:
        dwell = f" after {z['dwell_s']:.1f} s" if "dwell_s" in z else ""
        lines.append(f"  {_ts(z['time'])}  {z['kind']:<10} {z['zone']}: {z['label']} #{z['track_id']}{dwell}")
    return lines
