#!/usr/bin/env bash
# Quick start 1: set everything up, then analyze the demo clip with the embedded default models.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/foresight analyze data/demo.mp4 --out data/demo.result.json "$@"
