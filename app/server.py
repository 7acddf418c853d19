"""`foresight serve`: the REST API under uvicorn."""

from __future__ import annotations

import argparse
import os
import signal
import sys

from app.services.recordings import add_recording_flags
from app.services.settings import add_analysis_flags, parse_args
from app.validate import (
    OneLineParser,
    check_bindable,
    checkpoint_file,
    host,
    nonnegative_float,
    port,
    positive_float,
    positive_int,
)
from models.errors import EXIT_BAD_INPUT, EXIT_OK, BadInput
from pipelines.sinks.exporters import check_writable_dir


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="foresight serve", description="Run the Foresight REST API (OpenAPI at /docs).")
    p.add_argument("--host", type=host, default="127.0.0.1")
    p.add_argument("--port", type=port, default=8000, help="TCP port (default 8000; 0: any free port)")
    p.add_argument("--db", default="foresight.db", help="SQLite database (jobs, results, streams; default ./foresight.db)")
    p.add_argument("--uploads", help="folder for uploads in progress (default: uploads/ next to the database)")
    p.add_argument("--api-key", help="require this key on /v1 (visible to other users in `ps`: prefer "
                   "FORESIGHT_API_KEY or --api-key-file)")
    p.add_argument("--api-key-file", metavar="PATH",
                   help="read the API key from this file's first line (or set FORESIGHT_API_KEY_FILE)")
    p.add_argument("--max-upload-mb", type=positive_float, default=512.0, help="largest upload accepted (default 512 MB)")
    p.add_argument("--max-duration", type=positive_float, default=3600.0, help="longest clip accepted, seconds (default 3600)")
    p.add_argument("--max-queue", type=positive_int, default=32, help="queued + running jobs before 429 (default 32)")
    p.add_argument("--parallel", type=positive_int, help="jobs analysed at once (default: the Ray cluster's CPUs)")
    p.add_argument("--max-streams", type=positive_int, default=8, help="live streams at once (default 8)")
    p.add_argument("--allow-type", action="append", dest="allowed_types",
                   help="allowed upload content type (repeat; default: common video and audio types)")
    p.add_argument("--grounder", type=checkpoint_file, help="TriSense checkpoint: search also uses the grounding index in --db")
    p.add_argument("--source-scheme", action="append", dest="source_schemes", metavar="SCHEME",
                   help="scheme POST /v1/streams may use (repeat; default rtsp, rtsps, http, https)")
    p.add_argument("--source-network", action="append", dest="source_networks", metavar="CIDR",
                   help="network stream sources and webhooks may reach (repeat; replaces the default private "
                        "LANs 10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7)")
    p.add_argument("--source-host", action="append", dest="source_hosts", metavar="NAME",
                   help="host name stream sources and webhooks may use ('cam*.lan' allowed; repeat); when given, "
                        "other names are refused before any DNS lookup")
    p.add_argument("--no-public-sources", action="store_true",
                   help="refuse stream sources and webhooks on public (internet) addresses")
    p.add_argument("--allow-devices", action="store_true", help="let POST /v1/streams open /dev/videoN devices")
    p.add_argument("--trusted-host", action="append", dest="trusted_hosts", metavar="HOST",
                   help="accept only requests with this Host header (repeat; '*.example.org' allowed)")
    p.add_argument("--metrics-need-key", action="store_true", help="/metrics needs the API key too")
    p.add_argument("--log-level", default="warning")
    p.add_argument("--reconnect-budget", type=nonnegative_float, metavar="SECONDS",
                   help="give up on a live stream that stays down this many seconds (default: never; it is "
                        "retried with capped backoff until it comes back or is stopped)")
    p.add_argument("--reconnect-max-delay", type=positive_float, default=8.0, metavar="SECONDS",
                   help="longest wait between reconnection attempts of a live stream (default 8)")
    add_recording_flags(p)
    add_analysis_flags(p)
    return p


def make_settings(args: argparse.Namespace):
    from app.services.settings import Settings

    return Settings.from_args(args)


def serve_main(argv: list[str]) -> int:
    """Parse `argv` (without the program name), build the app and serve it until interrupted."""
    try:
        parser = build_parser()
        args = parse_args(parser, argv, {"serve": (parser, ("analysis", "serve"))})
        settings = make_settings(args)
        check_writable_dir(settings.db_path.parent, "--db")
        if settings.db_path.exists() and not os.access(settings.db_path, os.R_OK | os.W_OK):
            raise BadInput(f"--db {settings.db_path} is not writable")
        check_bindable(args.host, args.port)
    except (ValueError, FileNotFoundError, BadInput) as exc:
        print(f"foresight serve: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    import uvicorn

    from app.api import create_app

    # uvicorn shuts down gracefully on SIGTERM, then re-raises the signal to the handler that was there before
    # it: make that one a no-op, so a service manager's stop is exit 0 (it was death by signal 15)
    signal.signal(signal.SIGTERM, lambda signum, frame: None)
    uvicorn.run(create_app(settings), host=args.host, port=args.port, log_level=args.log_level,
                timeout_graceful_shutdown=10)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(serve_main(sys.argv[1:]))
