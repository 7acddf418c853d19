"""`foresight train corpus ...`: compose the embedded corpus and encode it once.

    build_main(["--out", "data/corpus", "--clips", "120", "--seed", "0"])                       # v1
    build_main(["--out", "data/corpus_v2", "--clips", "200", "--seed", "1", "--scripts", "0.7"])  # v2
    build_main(["--out", "data/corpus_v3", "--version", "3", "--clips", "160", "--asr", ""])        # v3 (real)

writes, under --out: `clips/*.mp4`, `truth/*.json`, PreFM's embedded layout (`embedded/{audio,visual}/`,
`label/label/{audio,visual}/`, `data_info/{train,val,test}_pd.csv`) and the grounder's data
(`grounding/{train,val,test}.jsonl`, `grounding/features/*.npz`). Rerunning with the same arguments reuses
every clip and feature already there. Bad arguments print one `error:` line and return 2.
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def _visual_config(detector: str | None, motion_gate: float | None, pose: str | None = None):
    """The picture models' settings when a flag departs from the app's defaults, else None (the defaults)."""
    if detector is None and motion_gate is None and pose is None:
        return None
    from dataclasses import replace

    from models.encoders.detectors import DETECTOR_NAMES
    from models.encoders.visual_config import VisualConfig, check_pose
    from models.errors import BadInput

    if detector is not None and detector not in DETECTOR_NAMES:
        raise ValueError(f"--detector: unknown detector {detector!r}; choose one of {', '.join(DETECTOR_NAMES)}")
    if motion_gate is not None and not 0 <= motion_gate <= 1:
        raise ValueError(f"--motion-gate: a share of the picture in [0, 1], got {motion_gate}")
    config = VisualConfig()
    if detector is not None:
        config = replace(config, detector=detector)
    if motion_gate is not None:
        config = replace(config, motion_gate=motion_gate or None)
    if pose is not None:
        try:
            config = replace(config, pose_model=check_pose(pose))
        except BadInput as exc:
            raise ValueError(f"--pose: {exc}") from None
    return config


def build_main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="foresight train corpus", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="corpus folder (large; keep it out of git, e.g. data/corpus)")
    p.add_argument("--clips", type=int, default=120, help="number of clips (split 70/10/20 train/val/test)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--min-seconds", type=int, default=12)
    p.add_argument("--max-seconds", type=int, default=16)
    p.add_argument("--scripts", type=float, default=0.0,
                   help="share of scripted clips (phone call, alarm, conversation, showcase), e.g. 0.7; "
                        "0 = the v1 corpus of independently placed sources")
    p.add_argument("--asr", default="tiny.en", help="speech recognizer spec (models.audio.asr.make_recognizer)")
    p.add_argument("--version", type=int, choices=(1, 2, 3, 4), default=None,
                   help="3 = real recordings and photos from packages, split by source file (training/corpus/"
                        "compose_v3.py), with YAMNet teacher features; 4 = the same over the second source round "
                        "too (docs/corpus.md); default: v1/v2 as --scripts says")
    p.add_argument("--detector", default=None, metavar="NAME",
                   help="the COCO detector whose counts go into the visual features (default: the app's)")
    p.add_argument("--motion-gate", type=float, default=None, metavar="SHARE",
                   help="the picture models' motion gate (default: the app's; 0 = look at every second)")
    p.add_argument("--pose", default=None, metavar="NAME",
                   help="the pose model whose poses go into the visual features (default: the app's)")
    p.add_argument("--no-features", action="store_true", help="compose only, do not run the encoders")
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from training.corpus.compose import compose_corpus
    from training.corpus.features import encode_corpus

    try:
        if a.clips < 2:
            raise ValueError("--clips must be at least 2")
        visual = _visual_config(a.detector, a.motion_gate, a.pose)
        t0 = time.time()
        if a.version in (3, 4):
            from training.corpus.compose_v3 import compose_corpus_v3

            truths = compose_corpus_v3(a.out, a.clips, a.seed, progress=not a.quiet, version=a.version)
        else:
            truths = compose_corpus(a.out, a.clips, a.seed, a.min_seconds, a.max_seconds, progress=not a.quiet,
                                    scripts=a.scripts)
        print(f"composed {len(truths)} clips, {sum(t.duration for t in truths)} s, "
              f"{sum(len(t.queries) for t in truths)} queries in {time.time() - t0:.0f} s")
        if not a.no_features:
            t1 = time.time()
            lengths = encode_corpus(a.out, asr=a.asr or None, progress=not a.quiet, visual=visual)
            print(f"encoded {len(lengths)} clips ({sum(lengths.values())} s) in {time.time() - t1:.0f} s")
            if a.version in (3, 4):
                from training.corpus.teacher import write_teachers

                write_teachers(a.out, lengths, progress=not a.quiet)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(build_main())
