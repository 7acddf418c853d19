"""A live stream's watches (standing queries): the ones a caller gives, checked before the stream starts, and a
live pipeline that keeps its grounding stage so watches can be added while it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from models.errors import BadInput

if TYPE_CHECKING:
    from pipelines import AnalyzeOptions

MAX_WATCHES, MAX_WATCH_CHARS = 20, 200


def check_watches(watches: list[str]) -> list[str]:
    """Standing queries as given, stripped; BadInput for blank ones or too many."""
    from models.watches import parse_watch

    out = [parse_watch(w).text for w in watches]  # BadInput for a blank one or a bad threshold
    if len(out) > MAX_WATCHES or any(len(w) > MAX_WATCH_CHARS for w in out):
        raise BadInput(f"at most {MAX_WATCHES} watches of {MAX_WATCH_CHARS} characters each")
    return list(dict.fromkeys(out))


def make_watchable(options: AnalyzeOptions) -> None:
    """Keep the grounding stage in a live pipeline even without watches, so watches can be added while it runs
    (when the grounding model is built; otherwise the stream runs without it and refuses watches)."""
    from pipelines.stages.grounding import checkpoint_path

    try:
        options.grounding.checkpoint = str(checkpoint_path(options.grounding.checkpoint))
    except BadInput:
        return
    options.grounding.watchable = True
