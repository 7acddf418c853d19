"""The programs the policy writes: two code tokens (a row filter and an aggregate) rendered as Python.

A program binds `rows` with a filter and prints an aggregate of it, over the sandbox's variables
`events`, `transcript`, `LABEL` (the event label the question names) and `WORD` (the word it quotes).
Of the 24 programs, one answers each kind of question; the others print a wrong value or fail at run time
(a `KeyError` for a field the rows lack, a `ValueError` for the minimum of nothing), which the policy sees.

`think` is the same program worked out "in the head" instead: over only the part of the log that fits the
model's context window. It is how the policy answers without the tool, and why the tool helps on long logs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

Rows = Sequence[dict[str, Any]]

FILTER_CODE: dict[str, str] = {
    "label": "rows = [e for e in events if e['label'] == LABEL]",
    "mention": ("import re\n"
                "rows = [t for t in transcript if re.search(r'\\b' + re.escape(WORD) + r'\\b', t['text'], re.I)]"),
    "after": ("t0 = min(e['start'] for e in events if e['label'] == LABEL)\n"
              "rows = [t for t in transcript if t['start'] >= t0]"),
    "before": ("t0 = min(e['start'] for e in events if e['label'] == LABEL)\n"
               "rows = [t for t in transcript if t['start'] < t0]"),
}
AGG_CODE: dict[str, str] = {
    "count": "print(len(rows))",
    "first_start": "print(min(r['start'] for r in rows))",
    "last_end": "print(max(r['end'] for r in rows))",
    "total": "print(round(sum(r['end'] - r['start'] for r in rows), 1))",
    "first_text": "print(min(rows, key=lambda r: r['start'])['text'] if rows else 'nothing')",
    "last_text": "print(max(rows, key=lambda r: r['start'])['text'] if rows else 'nothing')",
}
FILTERS: tuple[str, ...] = tuple(FILTER_CODE)
AGGS: tuple[str, ...] = tuple(AGG_CODE)


def render(filter_name: str, agg_name: str) -> str:
    """The Python source of a program."""
    return f"{FILTER_CODE[filter_name]}\n{AGG_CODE[agg_name]}\n"


def _mentions(word: str, text: str) -> bool:
    return re.search(r"\b" + re.escape(word) + r"\b", text, re.I) is not None


def _first_start(events: Rows, label: str) -> float:
    return min(e["start"] for e in events if e["label"] == label)


FILTER_FN: dict[str, Callable[[Rows, Rows, str, str], list[dict[str, Any]]]] = {
    "label": lambda ev, tr, label, word: [e for e in ev if e["label"] == label],
    "mention": lambda ev, tr, label, word: [t for t in tr if _mentions(word, t["text"])],
    "after": lambda ev, tr, label, word: [t for t in tr if t["start"] >= _first_start(ev, label)],
    "before": lambda ev, tr, label, word: [t for t in tr if t["start"] < _first_start(ev, label)],
}
AGG_FN: dict[str, Callable[[list[dict[str, Any]]], Any]] = {
    "count": len,
    "first_start": lambda rows: min(r["start"] for r in rows),
    "last_end": lambda rows: max(r["end"] for r in rows),
    "total": lambda rows: round(sum(r["end"] - r["start"] for r in rows), 1),
    "first_text": lambda rows: min(rows, key=lambda r: r["start"])["text"] if rows else "nothing",
    "last_text": lambda rows: max(rows, key=lambda r: r["start"])["text"] if rows else "nothing",
}


def evaluate(filter_name: str, agg_name: str, events: Rows, transcript: Rows, label: str, word: str) -> str:
    """The program's printed answer, computed in-process (raises what the program would raise)."""
    return str(AGG_FN[agg_name](FILTER_FN[filter_name](events, transcript, label, word)))


def think(filter_name: str, agg_name: str, events: Rows, transcript: Rows, label: str, word: str,
          window: tuple[int, int]) -> str | None:
    """The answer worked out without the tool: the same steps over the first `window` = (events, transcript
    lines) rows only, the part of a long log that fits in context. None where the steps fail."""
    try:
        return evaluate(filter_name, agg_name, events[:window[0]], transcript[:window[1]], label, word)
    except (KeyError, ValueError):
        return None
