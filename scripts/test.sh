#!/usr/bin/env bash
# Quick start 2: set everything up, then run lint and the whole test suite (slow tests included).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
.venv/bin/ruff check app pipelines models ui training tests benchmarks scripts
exec .venv/bin/python -m pytest -q -p no:cacheprovider --durations=15 "$@"
