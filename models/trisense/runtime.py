"""The grounder's network behind one numpy interface: ONNX Runtime by default, the torch model when asked.

Analysis (`Grounder.answer`) and search (`GroundingIndex`) call three pieces of the network: the full model over
a batch of windows (span logits and modality weights), the coarse head's per-second embeddings (the index's
windows, the selected memory's keys) and its query embedding (the coarse stage of a search). The first time a
machine loads a checkpoint they are exported to ONNX (`models.onnx_runtime`, under names keyed by the sha256 of
the checkpoint file; torch is imported for that only), the full model's file carrying the config, the
checkpoint's metadata and the coarse head's fingerprint in its `metadata_props`. Every later process opens the
three files with ONNX Runtime and never imports torch. Outputs match the torch model's to about 1e-6
(`tests/test_grounder_onnx.py`). `FORESIGHT_GROUNDER=torch`, or a failed export, uses the torch model.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from models.cache import file_sha256
from models.trisense.config import TriSenseConfig
from models.trisense.decode import SpanPrediction, decode_span_arrays
from models.trisense.features import MODALITIES

log = logging.getLogger(__name__)

EXPORT_VERSION = "trisense-onnx-1"  # part of the file names: bump when the exported graphs change
PARTS = ("full", "seconds", "query")
OUTPUTS = ("start_logits", "end_logits", "inside_logits", "modality_weights", "step_weights")


def coarse_fingerprint(model: Any) -> str:
    """Hash of a torch model's coarse head: stored window vectors are only valid for the same head."""
    h = hashlib.sha1()
    for name, tensor in sorted(model.coarse.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().cpu().numpy().tobytes())
    return h.hexdigest()[:16]


def model_inputs(config: TriSenseConfig, feats: dict[str, np.ndarray], masks: np.ndarray, valid: np.ndarray,
                 query: np.ndarray, evidence: np.ndarray | None) -> dict[str, np.ndarray]:
    """The full graph's feeds by name (evidence only for a model built with it)."""
    feeds = {m: np.ascontiguousarray(feats[m], np.float32) for m in MODALITIES}
    feeds.update(masks=np.ascontiguousarray(masks, bool), valid=np.ascontiguousarray(valid, bool),
                 query=np.array(query, np.float32))  # a copy: a broadcast query is read-only
    if config.evidence_dim:
        if evidence is None:
            raise ValueError("this grounder needs per-second evidence (models.trisense.evidence)")
        feeds["evidence"] = np.ascontiguousarray(evidence, np.float32)
    return feeds


class TorchBackend:
    """The torch `TriSenseModel` itself (what `FORESIGHT_GROUNDER=torch` and in-memory models use)."""

    def __init__(self, model: Any, meta: dict | None = None):
        self.model, self.config, self.meta = model, model.config, dict(meta or {})

    def torch_model(self) -> Any:
        return self.model

    def fingerprint(self) -> str:
        return coarse_fingerprint(self.model)

    def coarse_seconds(self, feats: dict[str, np.ndarray]) -> np.ndarray:
        """`{m: [B,T,D_m]}` -> unit vectors `[B,3,T,k]`."""
        import torch

        with torch.no_grad():
            return self.model.coarse.embed_seconds(
                {m: torch.from_numpy(np.ascontiguousarray(feats[m], np.float32)) for m in MODALITIES}).numpy()

    def coarse_query(self, query: np.ndarray) -> np.ndarray:
        """`[B,384]` -> unit vectors `[B,3,k]`."""
        import torch

        with torch.no_grad():
            return self.model.coarse.embed_query(torch.from_numpy(np.array(query, np.float32))).numpy()

    def _forward(self, feats, masks, valid, query, evidence):
        import torch

        feeds = {k: torch.from_numpy(v) for k, v in model_inputs(self.config, feats, masks, valid, query,
                                                                 evidence).items()}
        return self.model({m: feeds[m] for m in MODALITIES}, feeds["masks"], feeds["valid"], feeds["query"],
                          feeds.get("evidence"))

    def outputs(self, feats, masks, valid, query, evidence=None) -> dict[str, np.ndarray]:
        """The model's outputs `OUTPUTS` as arrays."""
        import torch

        with torch.no_grad():
            out = self._forward(feats, masks, valid, query, evidence)
        return {name: getattr(out, name).numpy() for name in OUTPUTS}

    def spans(self, feats, masks, valid, query, evidence, top_k: int, max_span_s: int) -> list[list[SpanPrediction]]:
        import torch

        from models.trisense.modeling_trisense import decode_spans

        with torch.no_grad():
            return decode_spans(self._forward(feats, masks, valid, query, evidence), top_k=top_k,
                                max_span_s=max_span_s)


class OnnxBackend:
    """The exported graphs in ONNX Runtime (one thread each); the torch model only if someone asks for it."""

    def __init__(self, checkpoint: Path, files: dict[str, Path], model: Any = None):
        from models.onnx_runtime import session

        self.checkpoint = Path(checkpoint)
        self.sessions = {part: session(files[part]) for part in PARTS}
        props = self.sessions["full"].get_modelmeta().custom_metadata_map
        self.config = TriSenseConfig.from_dict(json.loads(props["trisense_config"]))
        self.meta = json.loads(props["trisense_meta"])
        self._fingerprint = props["coarse_fingerprint"]
        self._model, self._lock = model, threading.Lock()

    def torch_model(self) -> Any:
        """The torch model of the same checkpoint (training, benchmarks), loaded on first use."""
        with self._lock:
            if self._model is None:
                from models.trisense.checkpoint import load_checkpoint

                self._model = load_checkpoint(self.checkpoint)[0]
            return self._model

    def fingerprint(self) -> str:
        return self._fingerprint

    def coarse_seconds(self, feats: dict[str, np.ndarray]) -> np.ndarray:
        return self.sessions["seconds"].run(None, {m: np.ascontiguousarray(feats[m], np.float32)
                                                   for m in MODALITIES})[0]

    def coarse_query(self, query: np.ndarray) -> np.ndarray:
        return self.sessions["query"].run(None, {"query": np.ascontiguousarray(query, np.float32)})[0]

    def outputs(self, feats, masks, valid, query, evidence=None) -> dict[str, np.ndarray]:
        values = self.sessions["full"].run(list(OUTPUTS), model_inputs(self.config, feats, masks, valid, query,
                                                                       evidence))
        return dict(zip(OUTPUTS, values, strict=True))

    def spans(self, feats, masks, valid, query, evidence, top_k: int, max_span_s: int) -> list[list[SpanPrediction]]:
        out = self.outputs(feats, masks, valid, query, evidence)
        return decode_span_arrays(out["start_logits"], out["end_logits"], out["inside_logits"], out["step_weights"],
                                  np.asarray(valid, bool), top_k=top_k, max_span_s=max_span_s)


def exported_files(checkpoint: str | Path) -> dict[str, Path]:
    """Where the three exports of this checkpoint live (new names whenever its bytes change)."""
    from models.onnx_runtime import exported_file

    digest = file_sha256(Path(checkpoint))
    return {part: exported_file(f"trisense-{part}", digest, EXPORT_VERSION) for part in PARTS}


def export_encoder(encoder: Any) -> Any:
    """A stand-in for the model's `nn.TransformerEncoder` (plain, pre-norm, GELU layers) computing the same thing
    with the same weights in ops whose shapes stay dynamic: traced `nn.MultiheadAttention` keeps the example's
    sequence length in a Reshape."""
    import torch
    import torch.nn.functional as F

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers, self.norm = encoder.layers, encoder.norm

        def attend(self, attn: Any, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
            heads = attn.num_heads
            qkv = F.linear(x, attn.in_proj_weight, attn.in_proj_bias).unflatten(-1, (3, heads, attn.head_dim))
            q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # [B,H,L,hd] each
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(attn.head_dim) + bias
            out = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).flatten(2)
            return attn.out_proj(out)

        def forward(self, x: torch.Tensor, src_key_padding_mask: torch.Tensor) -> torch.Tensor:
            bias = torch.zeros_like(src_key_padding_mask, dtype=x.dtype)
            bias = bias.masked_fill(src_key_padding_mask, float("-inf"))[:, None, None, :]
            for layer in self.layers:
                x = x + self.attend(layer.self_attn, layer.norm1(x), bias)
                x = x + layer.linear2(layer.activation(layer.linear1(layer.norm2(x))))
            return x if self.norm is None else self.norm(x)

    for layer in encoder.layers:
        if not (isinstance(layer, torch.nn.TransformerEncoderLayer) and layer.norm_first
                and layer.activation is F.gelu and layer.self_attn._qkv_same_embed_dim):
            raise ValueError("only plain pre-norm GELU encoder layers export to ONNX")
    return Encoder()


def export_onnx(model: Any, meta: dict, files: dict[str, Path], what: str = "grounder") -> None:
    """Export the pieces of `model` whose files are missing (torch's TorchScript exporter, opset 17)."""
    import torch

    from models.onnx_runtime import export_once

    config = model.config
    encoder = export_encoder(model.encoder)
    dims = {m: config.modality_dim(m) for m in MODALITIES}

    class Full(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, visual, audio, speech, masks, valid, query, evidence=None):
            out = self.model({"visual": visual, "audio": audio, "speech": speech}, masks, valid, query, evidence)
            return tuple(getattr(out, name) for name in OUTPUTS)

    class Seconds(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.coarse = model.coarse

        def forward(self, visual, audio, speech):
            return self.coarse.embed_seconds({"visual": visual, "audio": audio, "speech": speech})

    class Query(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.coarse = model.coarse

        def forward(self, query):
            return self.coarse.embed_query(query)

    B, T = 2, 16  # example shapes only: batch and time stay dynamic
    seconds = {m: torch.randn(B, T, dims[m]) for m in MODALITIES}
    masks = torch.ones(B, len(MODALITIES), T, dtype=torch.bool)
    valid = torch.ones(B, T, dtype=torch.bool)
    query = torch.randn(B, config.query_dim)
    bt = {0: "batch", 1: "time"}
    full_args: tuple = (*seconds.values(), masks, valid, query)
    full_names = [*MODALITIES, "masks", "valid", "query"]
    full_axes = {**{m: bt for m in MODALITIES}, "masks": {0: "batch", 2: "time"}, "valid": bt,
                 "query": {0: "batch"}, "modality_weights": {0: "batch"},
                 **{name: bt for name in OUTPUTS if name != "modality_weights"}}
    if config.evidence_dim:
        full_args += (torch.rand(B, len(MODALITIES), T, config.evidence_dim),)
        full_names.append("evidence")
        full_axes["evidence"] = {0: "batch", 2: "time"}
    graphs = {
        "full": (Full(), full_args, full_names, list(OUTPUTS), full_axes),
        "seconds": (Seconds(), tuple(seconds.values()), list(MODALITIES), ["keys"],
                    {**{m: bt for m in MODALITIES}, "keys": {0: "batch", 2: "time"}}),
        "query": (Query(), (query,), ["query"], ["query_keys"], {"query": {0: "batch"}, "query_keys": {0: "batch"}}),
    }
    props = {"trisense_config": json.dumps(config.to_dict()), "trisense_meta": json.dumps(meta),
             "coarse_fingerprint": coarse_fingerprint(model)}

    def exporter(part: str):
        def export(tmp: str) -> None:
            module, args, inputs, outputs, axes = graphs[part]
            original = model.encoder
            model.encoder = encoder  # for the trace only
            try:
                with torch.no_grad(), warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # the tracer's notes on Python branches: shapes stay dynamic
                    torch.onnx.export(module.eval(), args, tmp, input_names=inputs, output_names=outputs,
                                      dynamic_axes=axes, opset_version=17, dynamo=False)
            finally:
                model.encoder = original
            if part == "full":
                import onnx

                graph = onnx.load(tmp)
                for key, value in props.items():
                    entry = graph.metadata_props.add()
                    entry.key, entry.value = key, value
                onnx.save(graph, tmp)
        return export

    for part in PARTS:
        export_once(files[part], exporter(part), f"{what} ({part})")


def load_backend(checkpoint: str | Path) -> OnnxBackend | TorchBackend:
    """The checkpoint's network: ONNX Runtime (exporting it the first time on this machine) unless
    `FORESIGHT_GROUNDER=torch` or that fails; a checkpoint that cannot be read is an error either way."""
    from models.trisense.checkpoint import load_checkpoint

    path = Path(checkpoint)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    model = meta = None
    if os.environ.get("FORESIGHT_GROUNDER", "onnx") != "torch":
        files = exported_files(path)
        if not all(f.is_file() for f in files.values()):
            model, meta = load_checkpoint(path)
        try:
            if model is not None:
                export_onnx(model, meta, files, what=f"grounder {path.name}")
            return OnnxBackend(path, files, model)
        except Exception as exc:  # a failed export or a broken file: the torch model still grounds
            log.warning("grounder through ONNX Runtime failed (%s); using torch", exc)
    if model is None:
        model, meta = load_checkpoint(path)
    return TorchBackend(model, meta)
