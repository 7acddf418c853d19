"""`foresight dashboard`: runs the Streamlit app headless on a port."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from app.services.recordings import add_recording_flags, retention_from
from models.errors import EXIT_BAD_INPUT, BadInput

APP = Path(__file__).resolve().with_name("dashboard.py")
ROOT = APP.parents[1]


def build_parser() -> argparse.ArgumentParser:
    from app.validate import OneLineParser

    p = OneLineParser(prog="foresight dashboard", description="Run the Foresight Streamlit dashboard.")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8501)
    p.add_argument("--db", default="foresight.db", help="SQLite store shared with `foresight serve` (default ./foresight.db)")
    p.add_argument("--max-upload-mb", type=int, default=512, help="largest file the upload widget takes")
    p.add_argument("--max-streams", type=int, default=2,
                   help="live sources that may run at once (each holds several GB of models)")
    add_recording_flags(p)
    p.add_argument("--config", metavar="FILE", help="TOML file of defaults for these flags (keys: long flag names); "
                   "also $FORESIGHT_CONFIG")
    return p


# Streamlit sends a large message once and later only its hash, which the browser looks up in a cache it ages by
# script runs; the live view reruns every second, and a hash that outran its message stopped the page with
# "Connection error ... Cached ForwardMsg MISS" (a known Streamlit race; CI's review-feed test met it). No message
# is that large here (pictures go as media URLs), so every message is sent whole.
NO_MESSAGE_CACHE = "1e18"


def streamlit_command(args: argparse.Namespace) -> list[str]:
    return [sys.executable, "-m", "streamlit", "run", str(APP), "--server.headless", "true",
            "--server.address", args.host, "--server.port", str(args.port),
            "--server.maxUploadSize", str(args.max_upload_mb), "--browser.gatherUsageStats", "false",
            "--server.fileWatcherType", "none", "--global.developmentMode", "false",
            "--client.toolbarMode", "minimal", "--global.minCachedMessageSize", NO_MESSAGE_CACHE]


def dashboard_main(argv: list[str]) -> int:
    """Parse `argv`, then run `streamlit run ui/dashboard.py` in the foreground until interrupted."""
    from app.services.settings import parse_args

    try:
        parser = build_parser()
        args = parse_args(parser, argv, {"dashboard": (parser, ("dashboard",))})
        retention_from(args)
    except BadInput as exc:
        print(f"foresight dashboard: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    db = Path(args.db).expanduser().resolve()
    if not db.parent.is_dir():
        print(f"foresight dashboard: error: --db folder {db.parent} does not exist", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not 0 < args.port < 65536:
        print("foresight dashboard: error: --port must be in 1..65535", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.max_streams < 1:
        print("foresight dashboard: error: --max-streams must be 1 or more", file=sys.stderr)
        return EXIT_BAD_INPUT
    env = {**os.environ, "FORESIGHT_DB": str(db), "FORESIGHT_MAX_STREAMS": str(args.max_streams),
           "FORESIGHT_RECORD_MINUTES": str(args.record_minutes), "FORESIGHT_RECORD_GB": str(args.record_gb),
           "FORESIGHT_KEEP_DAYS": str(args.keep_days),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    try:
        return subprocess.call(streamlit_command(args), cwd=ROOT, env=env)
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(dashboard_main(sys.argv[1:]))
