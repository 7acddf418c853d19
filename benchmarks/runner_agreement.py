"""Do the runners agree on standing queries, run after run, idle or loaded?

Issue 19 saw the Ray runner miss a standing-query firing that the inline runner made, in about one run of six,
and never found why. This runs one clip with watches through the inline runner once and through Ray `--runs`
times on each way of calling the stage host (the whole second in one call; a call per node), optionally beside
`--hogs` busy processes, and prints, per run, whether the moments (standing or not) equal the inline runner's.

    python -m benchmarks.runner_agreement [--clip flash|demo] [--runs 10] [--hogs 1]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pipelines import AnalyzeOptions, GroundingConfig, analyze, analyze_inline  # noqa: E402
from pipelines.spine import hosts  # noqa: E402
from pipelines.spine.runtime import ensure_ray  # noqa: E402

# Each clip with the watches that fire on it: on the flash clip one fires just over its own threshold.
CLIPS = {
    "flash": (["a short beep"], ["a flash of light @0.2", "a beep"]),
    "demo": (["a telephone is ringing"],
             ["a telephone is ringing", "someone talks about the front door", "a person walks"]),
}


def clip_path(name: str, folder: Path) -> Path:
    from training.media.synth import build_demo_clip, flash_tone_clip

    if name == "demo":
        build_demo_clip(folder / "demo.mp4")
        return folder / "demo.mp4"
    return flash_tone_clip(folder / "flash.mp4", duration_s=6.0, event_s=(2.0, 4.0))


def moments(result: dict) -> str:
    """The moments as compared: who fired, when, and the score to 5 places."""
    return json.dumps([(m.get("watch"), m["start"], m["end"], round(m["score"], 5)) for m in result["moments"]])


def _hog() -> None:
    while True:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clip", choices=sorted(CLIPS), default="flash")
    parser.add_argument("--runs", type=int, default=10, help="Ray runs on each way of calling the host")
    parser.add_argument("--hogs", type=int, default=0, help="busy processes beside the runs (a loaded machine)")
    args = parser.parse_args()
    queries, standing = CLIPS[args.clip]

    def options() -> AnalyzeOptions:
        opts = AnalyzeOptions(grounding=GroundingConfig(queries=list(queries), standing=list(standing)))
        opts.stages.track = opts.stages.ocr = True  # every node of the graph
        return opts

    folder = Path(os.environ.get("TMPDIR", "/tmp")) / "runner_agreement"
    folder.mkdir(parents=True, exist_ok=True)
    clip = str(clip_path(args.clip, folder))
    reference = moments(analyze_inline(clip, options()))
    print(f"inline: {reference}", flush=True)
    ensure_ray()
    spawn = multiprocessing.get_context("spawn")  # a fork would inherit Ray's crash handlers (a dump at terminate)
    hogs = [spawn.Process(target=_hog, daemon=True) for _ in range(args.hogs)]
    for h in hogs:
        h.start()
    differ = 0
    try:
        for way, env in (("one call a second", "0"), ("a call per node", "1")):
            os.environ[hosts.NODE_CALLS_ENV] = env
            for i in range(args.runs):
                got = moments(analyze(clip, options()))
                differ += got != reference
                print(f"{way}, run {i + 1}: {'same' if got == reference else 'DIFFERENT ' + got}", flush=True)
    finally:
        for h in hogs:
            h.terminate()
    print(f"{args.clip} clip, {args.hogs} hogs: {2 * args.runs - differ} of {2 * args.runs} Ray runs equal the "
          "inline runner's moments")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
