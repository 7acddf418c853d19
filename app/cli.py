"""The `foresight` command line (design: exit 0 on success, 2 on bad input, 1 on internal failure)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from app.services.settings import add_analysis_flags
from app.validate import (
    OneLineParser,
    checkpoint_file,
    nonnegative_float,
    path_arg,
    positive_float,
    positive_int,
)
from models.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_OK, BadInput
from pipelines.sinks.exporters import check_writable_dir
from pipelines.spine.threads import pin_threads


def _graceful_stop():
    """First Ctrl-C (or SIGTERM) ends a live source cleanly and writes its results; a second one aborts."""
    import signal
    import threading

    stop = threading.Event()

    def handler(signum, frame):
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        print("foresight: stopping (press Ctrl-C again to abort)", file=sys.stderr)

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    return stop


def choose_runner(runner: str) -> str:
    """`inline` (this process: no Ray start-up, the nodes on threads) for the one source a command analyzes,
    a file or a camera, unless `RAY_ADDRESS` names a cluster: then `ray` (the actor spine). Both runners give a
    live source the same backpressure and latency budget; the threads runner costs one camera about half the CPU
    and memory (no Ray processes: docs/performance.md)."""
    if runner != "auto":
        return runner
    return "ray" if os.environ.get("RAY_ADDRESS") else "inline"


def cmd_analyze(args) -> int:
    if args.out:
        out = Path(args.out)
        if out.exists() and out.is_dir():
            raise BadInput(f"--out {out} is a directory")
        if out.exists() and not out.is_file():  # /dev/stdout, a pipe: written in place, whatever its folder allows
            if not os.access(out, os.W_OK):
                raise BadInput(f"--out {out} is not writable")
        else:
            check_writable_dir(out.parent, "--out")
    # Check the source before the heavy imports, Ray and the models: bad input fails in seconds.
    from pipelines.media.detect_source import parse_detect_source
    from pipelines.media.preflight import check_source
    from pipelines.media.sources import SourceKind, parse_source, settle_live

    spec = parse_source(args.source, args.rtsp_transport)
    check_source(spec, network=not args.retry)
    spec = settle_live(spec, None)  # an HTTP camera is live
    detect = parse_detect_source(args.detect_source, spec, args.rtsp_transport)
    if args.record and (spec.kind is SourceKind.FILE or not spec.live):
        raise BadInput("--record needs a live source (a camera URL or device); a file is its own recording")
    if detect is not None:
        check_source(detect, network=not args.retry)
    if spec.kind is SourceKind.FILE and not spec.live:  # the same cap as `serve --max-duration`, from the header
        from app.services.uploads import media_within

        info = media_within(Path(spec.uri), args.max_duration, "--max-duration")
        if not info.has_video and (args.zone or args.line or args.track):
            from pipelines.stages.config import no_picture

            raise BadInput(no_picture(args.source))

    from app.services.settings import analysis_options
    from app.summary import render_summary

    options = analysis_options(args)
    if spec.kind is SourceKind.FILE and not spec.live:  # and no further than that cap, whatever the header says
        from app.services.uploads import capped

        options = capped(options, args.max_duration)
    runner = choose_runner(args.runner)
    options.live = spec.live  # settled above: the runner need not open an HTTP source again to see
    options.reconnect.retry_before_data = args.retry
    options.detect_source = detect.uri if detect is not None else None
    if args.record:
        from pipelines.media.recorder import RecordConfig

        Path(args.record).mkdir(parents=True, exist_ok=True)
        check_writable_dir(Path(args.record), "--record")
        options.record = RecordConfig(args.record)
    stop = _graceful_stop()
    mode = args.progress
    if mode == "auto":
        mode = "bar" if sys.stderr.isatty() and not args.quiet else "none"
    from app.progress import Progress

    with Progress(mode) as shown:
        update = None if mode == "none" else shown.update  # (on Ray, each look at the progress is a call)
        if runner == "inline":
            from pipelines import analyze_inline

            result = analyze_inline(args.source, options, progress=update, stop_event=stop)
        else:
            from pipelines import analyze

            result = analyze(args.source, options, progress=update, stop_event=stop, source_checked=True)
    if args.out:
        from pipelines.sinks.exporters import write_json
        try:
            write_json(Path(args.out), result)
        except OSError as exc:
            raise BadInput(f"cannot write --out {args.out} ({exc.strerror or exc}){_kept(result)}") from None
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    elif not args.quiet:
        print(render_summary(result))
        if args.out:
            print(f"\nresult written to {args.out}")
    hooks = result.get("webhook") or {}
    if hooks.get("failed") or hooks.get("dropped"):
        print(f"foresight: {'error' if args.strict_webhooks else 'warning'}: webhook deliveries failed: "
              f"{hooks.get('failed', 0)} failed, {hooks.get('dropped', 0)} dropped, {hooks.get('sent', 0)} sent"
              + (f" (last error: {hooks['last_error']})" if hooks.get("last_error") else ""), file=sys.stderr)
        if args.strict_webhooks:
            return EXIT_BAD_INPUT
    failure = (result.get("ingest") or {}).get("failure")
    if failure:
        print(f"foresight: error: {failure}" + (" (partial results written)" if args.out else ""), file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_OK


def _kept(result: dict) -> str:
    """Where a result that could not go to --out was written instead (an hour of a camera is not lost because
    its folder went away or filled up), said as the end of the error line."""
    import tempfile

    from pipelines.sinks.exporters import write_json
    try:
        fd, path = tempfile.mkstemp(prefix="foresight-result-", suffix=".json")
        os.close(fd)
        write_json(Path(path), result)
    except OSError:
        return ""
    return f"; the result is in {path}"


def cmd_batch(args) -> int:
    from app.services.batch import run_batch
    from app.services.settings import analysis_options

    report = run_batch(args.folder, args.out, analysis_options(args), show_progress=not args.quiet,
                       max_parallel=args.parallel, max_duration_s=args.max_duration)
    if not args.quiet:
        print((Path(args.out) / "summary.md").read_text())
        print(f"{report.done} done ({report.skipped} from earlier runs), {report.failed} failed; outputs in {args.out}")
    return EXIT_OK if report.failed == 0 else EXIT_BAD_INPUT


def cmd_demo_clip(args) -> int:
    from training.media.synth import build_demo_clip

    truth = build_demo_clip(args.out)
    print(f"wrote {args.out} ({truth.duration_s:.0f} s): speech {truth.speech[0]:.1f}-{truth.speech[1]:.1f} s, "
          f"phone {truth.phone[0]:.1f}-{truth.phone[1]:.1f} s, alarm {truth.alarm[0]:.1f}-{truth.alarm[1]:.1f} s")
    return EXIT_OK


# Subcommands whose own argparse lives with the code they run; the rest of the command line is theirs.
DELEGATED = {
    "serve": ("app.server:serve_main", "the REST API (FastAPI on uvicorn; see docs/api.md)"),
    "dashboard": ("ui.launch:dashboard_main", "the Streamlit dashboard"),
}


def cmd_delegated(args) -> int:
    import importlib

    module, func = DELEGATED[args.command][0].split(":")
    return int(getattr(importlib.import_module(module), func)(args.rest) or 0)


# `foresight train NAME ...` / `foresight eval NAME ...` hand the rest of the command line to these.
TRAIN_EVAL = {
    ("train", "prefm"): "training.prefm.cli:train_main",
    ("eval", "prefm"): "training.prefm.cli:eval_main",
    ("train", "grounding"): "training.trisense.cli:train_main",
    ("eval", "grounding"): "training.trisense.cli:eval_main",
    ("eval", "safety"): "training.safety.cli:eval_main",
    ("eval", "perception"): "training.perception.cli:eval_main",
    ("train", "corpus"): "training.corpus.cli:build_main",
    ("train", "detset"): "training.perception.detset:build_main",
    ("train", "trackset"): "training.perception.trackset:build_main",
    ("eval", "training"): "training.cli:eval_training_main",
}


def _training_methods() -> list[str]:
    """The method packages of `training/` (each `foresight train <method>`), found without importing them."""
    from training.methods.runner import method_names

    return method_names()


def cmd_train_eval(args) -> int:
    import importlib

    if (args.command, args.model) not in TRAIN_EVAL:
        from training.cli import train_method_main

        return int(train_method_main(args.model, args.rest) or 0)
    module, func = TRAIN_EVAL[(args.command, args.model)].split(":")
    return int(getattr(importlib.import_module(module), func)(args.rest) or 0)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="foresight", description="Streaming multimodal video analysis.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("analyze", help="analyze a file, device (/dev/video0) or stream URL (rtsp://, http(s)://, HLS)")
    p.add_argument("source")
    p.add_argument("--out", type=path_arg, help="write the result JSON here")
    p.add_argument("--query", action="append", metavar="TEXT",
                   help="find the moments matching TEXT (repeatable); fills `moments`")
    p.add_argument("--watch", action="append", metavar="TEXT",
                   help="standing query: fires a moment live when TEXT matches the recent seconds (repeatable); "
                        "end it in '@0.7' for a threshold of its own")
    p.add_argument("--grounding-model", metavar="PATH", type=checkpoint_file, help="grounding checkpoint (default: the shipped embedded one)")
    p.add_argument("--json", action="store_true", help="print the result JSON instead of the summary")
    p.add_argument("--duration", type=positive_float, help="stop a live source after this many seconds")
    p.add_argument("--max-duration", type=positive_float, default=3600.0, metavar="SECONDS",
                   help="refuse a file whose container declares a longer duration (default 3600, as serve)")
    p.add_argument("--rtsp-transport", choices=["tcp", "udp"], default="tcp")
    p.add_argument("--watchdog", type=positive_float, default=5.0, help="seconds without data before a live source reconnects")
    p.add_argument("--reconnect-budget", type=nonnegative_float, default=30.0,
                   help="give up on a live source that stays down this many seconds (default 30)")
    p.add_argument("--retry", action="store_true",
                   help="a live source that is not up yet (a camera expected late): keep trying to connect, with "
                        "backoff, for up to --reconnect-budget seconds; without it a live source that cannot be "
                        "reached fails at once (exit 2), and reconnects only after it has sent data")
    p.add_argument("--detect-source", metavar="URL",
                   help="a live camera's low-resolution sub-stream: the analysis reads it, the recording "
                        "(--record) keeps the main source; its sound is analysed if it carries one")
    p.add_argument("--record", metavar="DIR",
                   help="record a live source into DIR (a ring of MPEG-TS segments, the newest 60 min, as serve "
                        "keeps; with --detect-source, the main stream)")
    p.add_argument("--progress", choices=["auto", "bar", "plain", "none"], default="auto",
                   help="progress display on stderr: a bar on terminals, 'plain' lines for logs (default auto)")
    p.add_argument("--runner", choices=["auto", "inline", "ray"], default="auto",
                   help="where the stages run: 'inline' in this process (threads), 'ray' on Ray actors (a crashed "
                        "stage restarts; a cluster); 'auto' (default): inline, Ray when RAY_ADDRESS is set")
    p.add_argument("--strict-webhooks", action="store_true",
                   help="exit with status 2 when a webhook delivery failed (default: a warning on stderr)")
    p.add_argument("-q", "--quiet", action="store_true")
    add_analysis_flags(p)
    p.set_defaults(func=cmd_analyze)

    p = sub.add_parser("batch", help="analyze every media file under a folder, in parallel, resumably")
    p.add_argument("folder")
    p.add_argument("--out", required=True, type=path_arg, help="output folder (JSON, WebVTT, results.jsonl, summary.md, foresight.db)")
    p.add_argument("--parallel", type=positive_int, help="files at once (default: the Ray cluster's CPUs)")
    p.add_argument("--max-duration", type=positive_float, default=3600.0, metavar="SECONDS",
                   help="report a file whose container declares a longer duration as failed (default 3600)")
    p.add_argument("-q", "--quiet", action="store_true")
    add_analysis_flags(p)
    p.set_defaults(func=cmd_batch)
    # what a config file may set: [analysis] and [analyze] for analyze, [analysis] and [batch] for batch
    parser.config_targets = {name: (sub.choices[name], ("analysis", name)) for name in ("analyze", "batch")}

    for name, (_, what) in DELEGATED.items():
        p = sub.add_parser(name, help=f"{what} (see `foresight {name} --help`)", add_help=False)
        p.add_argument("rest", nargs=argparse.REMAINDER)
        p.set_defaults(func=cmd_delegated)

    for verb, what in (("train", "train a model or build a corpus"), ("eval", "evaluate a model")):
        names = sorted([name for v, name in TRAIN_EVAL if v == verb] + (_training_methods() if verb == "train" else []))
        p = sub.add_parser(verb, help=f"{what}: {', '.join(names)} (see `foresight {verb} NAME --help`)",
                           add_help=False)
        p.add_argument("model", choices=names)
        p.add_argument("rest", nargs=argparse.REMAINDER)
        p.set_defaults(func=cmd_train_eval)

    p = sub.add_parser("demo-clip", help="build the demo clip from media that installed packages carry")
    p.add_argument("out")
    p.set_defaults(func=cmd_demo_clip)
    return parser


def _delegate(argv: list[str]) -> argparse.Namespace | None:
    """`serve`, `dashboard`, `train NAME`, `eval NAME`: everything after the name goes to the delegate as is
    (argparse's REMAINDER would swallow or reject a leading `--help`)."""
    if argv and argv[0] in DELEGATED:
        return argparse.Namespace(command=argv[0], rest=argv[1:], func=cmd_delegated, debug=False)
    if len(argv) >= 2 and ((argv[0], argv[1]) in TRAIN_EVAL
                           or (argv[0] == "train" and argv[1] in _training_methods())):
        return argparse.Namespace(command=argv[0], model=argv[1], rest=argv[2:], func=cmd_train_eval, debug=False)
    return None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    pin_threads()  # before any model loads: the CLI, the API's workers and batch give the same numbers
    args = _delegate(argv)
    if args is None:
        from app.services.settings import parse_args

        parser = build_parser()
        try:
            args = parse_args(parser, argv, parser.config_targets)
        except BadInput as exc:
            print(f"foresight: error: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
    debug = args.debug or os.environ.get("FORESIGHT_DEBUG") == "1"
    try:
        return args.func(args)
    except BadInput as exc:
        print(f"foresight: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("foresight: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if debug:
            raise
        print(f"foresight: internal error: {' '.join(str(exc).split())[:300]} (rerun with --debug for details)",
              file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
