"""PreFM at inference without torch: the checkpoint's window network exported to ONNX once per machine.

`online.py` asks a *runner* for the probabilities at a window's newest second and the future head's
anticipation (`window_probabilities`). `load_inference(path)` gives the process's runner for a checkpoint:

* `OnnxPreFM` (default): the network with its sigmoid heads, exported by torch the first time a machine needs
  it into `<cache>/onnx/prefm-<key>.onnx` (`models/onnx_runtime.py`; the key is the checkpoint's sha256 and
  `EXPORT_VERSION`), then run by ONNX Runtime on one thread. The checkpoint's config and metadata travel in
  the export's `metadata_props`, so a later process reads neither the .pt file nor torch. Outputs match
  torch's to 1e-5 (`tests/test_prefm_onnx.py`).
* `TorchPreFM`: the torch module itself, with `FORESIGHT_PREFM=torch`, when the export fails, and for any
  `PreFM` handed to `online.py` directly (training and evaluation, whose weights change).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from models import checkpoints
from models.cache import file_sha256
from models.prefm.config import PreFMConfig

log = logging.getLogger(__name__)

EXPORT_VERSION = "prefm-window-v1"  # bump when the exported graph or its metadata change
INPUTS = ("audio_window", "visual_window", "st_window")  # apart from the outputs' names


def output_names(config: PreFMConfig) -> list[str]:
    """The exported outputs: per-modality probabilities at the newest second, (B, C), then, with future
    modeling, "future_<m>" (B, Lf, C) for the seconds after it."""
    mods = ["audio", "visual", "av"] if config.task == "avvp" else ["av"]
    return mods + ([f"future_{m}" for m in mods] if config.use_future else [])


def split_outputs(outputs: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(current, future) dicts from named outputs, "future_" taken off the future ones' names."""
    current = {k: v for k, v in outputs.items() if not k.startswith("future_")}
    future = {k[len("future_"):]: v for k, v in outputs.items() if k.startswith("future_")}
    return current, future




def exported_path(checkpoint: str | Path) -> Path:
    """Where the ONNX export of this checkpoint's contents lives (a new file when the checkpoint changes)."""
    from models.onnx_runtime import exported_file

    return exported_file("prefm", file_sha256(checkpoint), EXPORT_VERSION)


def _window_module(model: Any):
    """The torch module that is exported: a window's tensors in, the named probabilities out."""
    import torch

    from models.prefm.modeling_prefm import probabilities

    class WindowProbabilities(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model, self.config = model.eval(), model.config

        def forward(self, audio, visual, st=None):
            c = self.config
            logits = self.model(audio, visual, st).logits
            now = c.Lc - 1
            outs = probabilities(logits[:, now], c.task)
            if c.use_future:
                outs.update({f"future_{k}": v for k, v in probabilities(logits[:, now + 1:], c.task).items()})
            return tuple(outs[name] for name in output_names(c))

    return WindowProbabilities(model)


def export_onnx(checkpoint: str | Path, path: Path) -> Path:
    """Export the checkpoint's window network (dynamic batch) to `path` with torch's exporter, its config and
    metadata as JSON in `metadata_props`; atomic on disk (`models.onnx_runtime.export_once`)."""
    from models.onnx_runtime import export_once

    checkpoint = Path(checkpoint)

    def export(tmp: str) -> None:
        import warnings

        import onnx
        import torch

        from models.prefm.modeling_prefm import load_checkpoint

        model, config, meta = load_checkpoint(checkpoint)
        rows = 64 if config.audio_rate == "clap_maps" else config.Lc
        example = [torch.zeros(2, rows, config.audio_dim), torch.zeros(2, config.Lc, config.visual_dim)]
        if config.st_dim is not None:
            example.append(torch.zeros(2, config.Lc, config.st_dim))
        inputs, outputs = list(INPUTS[:len(example)]), output_names(config)
        fastpath = torch.backends.mha.get_fastpath_enabled()
        # Eval-mode self-attention would take torch's fused kernel, which has no ONNX form: trace the plain ops.
        torch.backends.mha.set_fastpath_enabled(False)
        try:
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the tracer's notes on shape checks it froze: the window is fixed
                torch.onnx.export(_window_module(model), tuple(example), tmp, input_names=inputs,
                                  output_names=outputs, dynamic_axes={n: {0: "batch"} for n in inputs + outputs},
                                  opset_version=17, dynamo=False)
        finally:
            torch.backends.mha.set_fastpath_enabled(fastpath)
        proto = onnx.load(tmp)
        for key, value in (("prefm_config", config.to_dict()), ("prefm_meta", meta),
                           ("export_version", EXPORT_VERSION)):
            entry = proto.metadata_props.add()
            entry.key, entry.value = key, json.dumps(value, default=str)
        onnx.save(proto, tmp)

    return export_once(path, export, f"PreFM {checkpoint.name}")


class OnnxPreFM:
    """An exported PreFM in ONNX Runtime on one thread: `config`, `meta` and `window_probabilities`."""

    backend = "onnx"

    def __init__(self, onnx_path: str | Path):
        from models.onnx_runtime import session

        self.session = session(onnx_path)
        props = self.session.get_modelmeta().custom_metadata_map
        self.config = PreFMConfig.from_dict(json.loads(props["prefm_config"]))
        self.meta: dict[str, Any] = json.loads(props.get("prefm_meta", "{}"))
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.outputs = [o.name for o in self.session.get_outputs()]

    def eval(self) -> OnnxPreFM:
        return self

    def window_probabilities(self, audio: np.ndarray, visual: np.ndarray, st: np.ndarray | None = None
                             ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """(B, rows, Da), (B, Lc, Dv)[, (B, Lc, Dst)] float32 windows -> ({m: (B, C)}, {m: (B, Lf, C)})."""
        given = dict(zip(INPUTS, (audio, visual, st), strict=True))
        if "st_window" in self.inputs and st is None:
            raise ValueError("this model was built with st_dim; pass the st features")
        feeds = {name: np.ascontiguousarray(given[name], dtype=np.float32) for name in self.inputs}
        return split_outputs(dict(zip(self.outputs, self.session.run(None, feeds), strict=True)))


class TorchPreFM:
    """A torch `PreFM` behind the same interface (no gradients, on the module's device)."""

    backend = "torch"

    def __init__(self, model: Any, meta: dict[str, Any] | None = None):
        self.model = model.eval()
        self.config: PreFMConfig = model.config
        self.meta = dict(meta or {})
        self._window = _window_module(model)

    def eval(self) -> TorchPreFM:
        self.model.eval()
        return self

    def window_probabilities(self, audio: np.ndarray, visual: np.ndarray, st: np.ndarray | None = None
                             ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        import torch

        device = next(self.model.parameters()).device
        tensors = [torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).to(device) if x is not None else None
                   for x in (audio, visual, st)]
        with torch.no_grad():
            outs = self._window(*tensors)
        return split_outputs({k: v.cpu().numpy() for k, v in zip(output_names(self.config), outs, strict=True)})


def as_runner(model: Any) -> OnnxPreFM | TorchPreFM:
    """A runner for `model`: itself when it is one, else the torch `PreFM` wrapped."""
    return model if hasattr(model, "window_probabilities") else TorchPreFM(model)


_RUNNERS: dict[tuple, OnnxPreFM | TorchPreFM] = {}
_LOADING = threading.Lock()


def load_inference(path: str | Path | None = None) -> OnnxPreFM | TorchPreFM:
    """The process's runner for the checkpoint at `path` (default: the shipped one), shared by every caller:
    ONNX Runtime (exporting it the first time on a machine), or torch with `FORESIGHT_PREFM=torch`."""
    from models.prefm import SHIPPED_CHECKPOINT

    path = Path(SHIPPED_CHECKPOINT if path is None else path).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint not found: {path}")
    backend = os.environ.get("FORESIGHT_PREFM", "onnx")
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size, backend)
    with _LOADING:
        if key not in _RUNNERS:
            _RUNNERS[key] = _load(path, backend)
        return _RUNNERS[key]


def _load(path: Path, backend: str) -> OnnxPreFM | TorchPreFM:
    if backend != "torch":
        try:
            return OnnxPreFM(export_onnx(path, exported_path(path)))
        except Exception as exc:  # a failed export or a broken file: torch still gives the probabilities
            log.warning("PreFM through ONNX Runtime failed (%s); using torch", exc)
    from models.prefm.modeling_prefm import load_checkpoint

    model, _, meta = load_checkpoint(path)
    return TorchPreFM(model, meta)


def checkpoint_info(path: str | Path) -> tuple[PreFMConfig, dict[str, Any]]:
    """Config and metadata of a checkpoint: from the process's runner when its export exists (no torch),
    else from the .pt file."""
    path = Path(path)
    if os.environ.get("FORESIGHT_PREFM", "onnx") != "torch" and exported_path(path).is_file():
        runner = load_inference(path)
        return runner.config, runner.meta
    payload = checkpoints.read(path, what="PreFM checkpoint")
    return PreFMConfig.from_dict(payload["config"]), dict(payload.get("meta") or {})
