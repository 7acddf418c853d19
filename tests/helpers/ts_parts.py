"""MPEG-TS parts cut from a clip, each encoded on its own so its clock starts at 0: joined end to end, or listed
in an HLS playlist across a discontinuity, they make a source whose clock starts again (`decode.ContinuousClock`)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def ts_parts(src: Path, folder: Path, starts: tuple[float, ...], seconds: float,
             clocks: tuple[float, ...] | None = None, formats: tuple[tuple[str, ...], ...] | None = None) -> list[Path]:
    """`seconds` of `src` from each of `starts`, as `part0.ts`, `part1.ts`, ... in `folder`; `clocks` moves each
    part's clock on by that many seconds (an encoder whose clock starts elsewhere), `formats` gives each part
    more ffmpeg output options (another picture size, sample rate or channel layout)."""
    if shutil.which("ffmpeg") is None:
        pytest.fail("ffmpeg is required (scripts/bootstrap.sh installs it)")
    parts = []
    for i, start in enumerate(starts):
        parts.append(folder / f"part{i}.ts")
        clock = str(clocks[i] if clocks else 0)
        subprocess.run(["ffmpeg", "-nostdin", "-y", "-v", "error", "-ss", str(start), "-i", str(src),
                        "-t", str(seconds), "-c:v", "libx264", "-c:a", "aac", "-output_ts_offset", clock,
                        *(formats[i] if formats else ()), str(parts[-1])],
                       check=True, capture_output=True)
    return parts
