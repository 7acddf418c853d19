#!/usr/bin/env bash
# Quick start 2: set everything up, then run lint and the whole test suite (slow tests included).
set -euo pipefail
cd "$(dirname "$0")/.."
FORESIGHT_SETUP_METHODS=1 bash scripts/bootstrap.sh  # with the methods extra: their tests need it
.venv/bin/ruff check app pipelines models ui training tests benchmarks scripts
# Two workers (FORESIGHT_TEST_WORKERS; 0 runs in this process): most slow tests wait on a camera outage, a browser
# or a server, so two files at a time fit 2 cores. A file's tests stay in one worker (module fixtures: one
# browser, one camera).
workers=${FORESIGHT_TEST_WORKERS:-2}
exec .venv/bin/python -m pytest -q -p no:cacheprovider --durations=15 -n "$workers" --dist loadfile "$@"
