"""What a cold process pays before it analyzes anything, and what one Silero window costs.

Each import set runs in a fresh interpreter; its CPU seconds (user + system) are what every CLI run, stage
host and batch worker pays once. The VAD line times Silero on 20 s of audio through the package's own wrapper
(torch tensors per 32 ms window) and through `StreamingVAD` (the ONNX session called directly), in one process.

    python benchmarks/startup_costs.py
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

IMPORTS = {
    "python alone": "pass",
    "torch": "import torch",
    "torch + sentence-transformers, MiniLM loaded": (
        "import torch; from sentence_transformers import SentenceTransformer; "
        "from models.minilm import minilm_dir; SentenceTransformer(str(minilm_dir()), device='cpu')"),
    "torch + scikit-learn TF-IDF": "import torch, sklearn.feature_extraction.text",
    "onnxruntime + tokenizers": "import onnxruntime, tokenizers",
    "MiniLM through ONNX Runtime (models/minilm.py, export cached), loaded": (
        "from models.minilm import load_sentence_model, minilm_dir; load_sentence_model(minilm_dir()).encode(['warm'])"),
}


def cpu_of(code: str) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def vad_ms_per_window(seconds: float = 20.0) -> tuple[float, float]:
    import numpy as np
    import torch
    from silero_vad import load_silero_vad

    from models.audio.vad import RATE, WINDOW, StreamingVAD

    audio = (np.random.default_rng(0).standard_normal(int(seconds * RATE)) * 0.1).astype(np.float32)
    windows = audio.size // WINDOW
    wrapper = load_silero_vad(onnx=True)
    t0 = time.perf_counter()
    with torch.no_grad():
        for i in range(windows):
            wrapper(torch.from_numpy(audio[i * WINDOW:(i + 1) * WINDOW]), RATE)
    wrapped = (time.perf_counter() - t0) / windows * 1e3
    vad = StreamingVAD()
    t0 = time.perf_counter()
    vad.feed(audio, 0.0)
    direct = (time.perf_counter() - t0) / windows * 1e3
    return wrapped, direct


def main() -> None:
    from models.minilm import load_sentence_model, minilm_dir

    load_sentence_model(minilm_dir())  # exports MiniLM to ONNX if this machine has no export yet
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs")
    print("| import in a fresh interpreter | CPU s |")
    print("| --- | ---: |")
    for name, code in IMPORTS.items():
        print(f"| {name} | {cpu_of(code):.2f} |")
    wrapped, direct = vad_ms_per_window()
    print(f"\nSilero VAD, ms per 32 ms window: package wrapper {wrapped:.3f}, StreamingVAD {direct:.3f}")


if __name__ == "__main__":
    main()
