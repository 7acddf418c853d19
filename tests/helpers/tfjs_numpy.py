"""A second, independent reading of a TFJS graph model: its weights decoded here and its ops run in numpy with
TensorFlow's semantics (NHWC convolutions, TF's half-pixel bilinear resize). Slow and plain on purpose: it shares
no code with `models/encoders/tfjs_onnx.py`, so the converted ONNX graph can be checked against it."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np


def load(model_json: Path) -> tuple[list[dict], dict[str, np.ndarray], list[str]]:
    """Nodes, constants by name (float16 weights widened to float32) and the output tensor names."""
    spec = json.loads(Path(model_json).read_text())
    values: dict[str, np.ndarray] = {}
    for group in spec["weightsManifest"]:
        data = bytearray()
        for shard in group["paths"]:
            data += (Path(model_json).parent / shard).read_bytes()
        pos = 0
        for entry in group["weights"]:
            kind = entry.get("quantization", {}).get("dtype", entry["dtype"])
            dtype = {"float16": "<f2", "float32": "<f4", "int32": "<i4"}[kind]
            n = 1
            for d in entry["shape"]:
                n *= int(d)
            arr = np.frombuffer(bytes(data[pos:pos + n * np.dtype(dtype).itemsize]), dtype)
            pos += n * np.dtype(dtype).itemsize
            values[entry["name"]] = arr.reshape([int(d) for d in entry["shape"]]).astype(
                np.float32 if entry["dtype"] == "float32" else np.int64)
    outputs = [k.split(":")[0] for k in sorted(spec["signature"]["outputs"])]
    return spec["modelTopology"]["node"], values, outputs


def _ints(node: dict, key: str) -> list[int]:
    return [int(v) for v in node["attr"][key]["list"]["i"]]


def same_pad(x: np.ndarray, k: tuple[int, int], stride: tuple[int, int], value: float = 0.0) -> np.ndarray:
    """TF's SAME padding: out = ceil(in / stride), the odd pixel of padding at the bottom/right."""
    pads = [(0, 0)]
    for n, kk, s in zip(x.shape[1:3], k, stride, strict=True):
        total = max((-(-n // s) - 1) * s + kk - n, 0)
        pads.append((total // 2, total - total // 2))
    return np.pad(x, pads + [(0, 0)], constant_values=value)


def conv2d_nhwc(x: np.ndarray, w: np.ndarray, stride: tuple[int, int], depthwise: bool = False) -> np.ndarray:
    """TF Conv2D, VALID padding: x [N, H, W, C], w [kh, kw, C, O] (depthwise: [kh, kw, C, 1])."""
    kh, kw = w.shape[:2]
    win = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(1, 2))[:, ::stride[0], ::stride[1]]
    if depthwise:
        return np.einsum("nhwcij,ijc->nhwc", win, w[:, :, :, 0], optimize=True)
    return np.einsum("nhwcij,ijco->nhwo", win, w, optimize=True)


def maxpool_nhwc(x: np.ndarray, k: tuple[int, int], stride: tuple[int, int]) -> np.ndarray:
    win = np.lib.stride_tricks.sliding_window_view(x, k, axis=(1, 2))[:, ::stride[0], ::stride[1]]
    return win.max(axis=(-2, -1))


def resize_bilinear_half_pixel(x: np.ndarray, out_h: int, out_w: int, half: bool = True) -> np.ndarray:
    """TF ResizeBilinear(half_pixel_centers=True) on NHWC: source = (dst + 0.5) * in/out - 0.5, edges clamped
    (`half=False`: TF's legacy source = dst * in/out)."""
    def axis_weights(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        src = (np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5 if half else np.arange(n_out) * (n_in / n_out)
        lo = np.floor(src)
        frac = (src - lo).astype(np.float32)
        return np.clip(lo, 0, n_in - 1).astype(int), np.clip(lo + 1, 0, n_in - 1).astype(int), frac

    y0, y1, fy = axis_weights(x.shape[1], out_h)
    x0, x1, fx = axis_weights(x.shape[2], out_w)
    rows = x[:, y0] * (1 - fy)[None, :, None, None] + x[:, y1] * fy[None, :, None, None]
    return rows[:, :, x0] * (1 - fx)[None, None, :, None] + rows[:, :, x1] * fx[None, None, :, None]


def _wanted(nodes: list[dict], outputs: list[str]) -> set[str]:
    by_name = {n["name"]: n for n in nodes}
    found: set[str] = set()
    stack = list(outputs)
    while stack:
        name = stack.pop().split(":")[0].lstrip("^")
        if name not in found:
            found.add(name)
            stack.extend(by_name[name].get("input", []))
    return found


def _strided_index(node: dict, begin: np.ndarray, end: np.ndarray, step: np.ndarray) -> tuple:
    """TF StridedSlice's masks as a numpy index: begin/end masks drop a bound, shrink takes one element,
    new-axis inserts an axis, ellipsis stands for the dimensions not named."""
    m = {k: int(node["attr"].get(k, {}).get("i", 0)) for k in ("begin_mask", "end_mask", "shrink_axis_mask",
                                                                "new_axis_mask", "ellipsis_mask")}
    index: list = []
    for i, (b, e, st) in enumerate(zip(np.atleast_1d(begin), np.atleast_1d(end), np.atleast_1d(step), strict=True)):
        if m["ellipsis_mask"] >> i & 1:
            index.append(Ellipsis)
        elif m["new_axis_mask"] >> i & 1:
            index.append(np.newaxis)
        elif m["shrink_axis_mask"] >> i & 1:
            index.append(int(b))
        else:
            index.append(slice(None if m["begin_mask"] >> i & 1 else int(b), None if m["end_mask"] >> i & 1 else int(e),
                               int(st)))
    return tuple(index)


_PLAIN = {  # TF ops that are one numpy call on their inputs
    "Abs": np.abs, "Exp": np.exp, "Reciprocal": np.reciprocal, "RealDiv": np.divide, "Minimum": np.minimum,
    "Maximum": np.maximum, "Less": np.less, "Greater": np.greater, "GreaterEqual": np.greater_equal,
    "LogicalAnd": np.logical_and, "Select": np.where, "SquaredDifference": lambda a, b: (a - b) ** 2,
    "Range": lambda a, b, c: np.arange(a, b, c), "Size": lambda a: np.int64(a.size), "Tile": np.tile,
    "Fill": lambda shape, v: np.full(tuple(shape), v), "GatherNd": lambda a, i: a[tuple(np.moveaxis(i, -1, 0))],
}


def run(model_json: Path, feed: np.ndarray, only: list[str] | None = None) -> dict[str, np.ndarray]:
    """The graph's outputs (by name without ':0') for one input array; `only`: just these outputs."""
    nodes, t, outputs = load(model_json)
    if only:
        outputs = list(only)
        wanted = _wanted(nodes, outputs)
        nodes = [n for n in nodes if n["name"] in wanted]

    def get(ref: str) -> np.ndarray:
        name, _, k = ref.partition(":")
        v = t[name]
        return v[int(k)] if k and k != "0" else (v[0] if isinstance(v, list) else v)

    for node in nodes:
        op, ins = node["op"], [get(i) for i in node.get("input", []) if not i.startswith("^")]
        if op == "Const":
            continue
        if op == "Placeholder":
            out = feed.astype(np.float32)
        elif op in ("Add", "AddV2"):
            out = ins[0] + ins[1]
        elif op == "Identity":
            out = ins[0]
        elif op == "SparseToDense":
            out = np.full(ins[1].reshape(-1), ins[3], np.int64)
            for i, v in zip(ins[0].reshape(ins[2].size, out.ndim), ins[2].reshape(-1), strict=True):
                out[tuple(i)] = v
        elif op in ("Pad", "PadV2"):
            value = float(ins[2]) if op == "PadV2" else 0.0
            out = np.pad(ins[0], [tuple(p) for p in ins[1]], constant_values=value)
        elif op == "Transpose":
            out = ins[0].transpose(ins[1])
        elif op in ("Conv2D", "_FusedConv2D", "DepthwiseConv2dNative", "FusedDepthwiseConv2dNative"):
            s = _ints(node, "strides")
            x = ins[0]
            if base64.b64decode(node["attr"]["padding"]["s"]) == b"SAME":
                x = same_pad(x, ins[1].shape[:2], (s[1], s[2]))
            out = conv2d_nhwc(x, ins[1], (s[1], s[2]), depthwise="Depthwise" in op)
            extra = [base64.b64decode(v) for v in node["attr"].get("fused_ops", {}).get("list", {}).get("s", [])]
            if extra:
                assert extra[0] == b"BiasAdd"
                out = out + ins[2]
            if b"Relu" in extra:
                out = np.maximum(out, 0)
            if b"Relu6" in extra:
                out = np.clip(out, 0, 6)
            assert set(extra) <= {b"BiasAdd", b"Relu", b"Relu6"}, extra
        elif op == "Mul":
            out = ins[0] * ins[1]
        elif op == "Relu":
            out = np.maximum(ins[0], 0)
        elif op == "Relu6":
            out = np.clip(ins[0], 0, 6)
        elif op == "Mean":
            out = ins[0].mean(axis=tuple(int(a) for a in ins[1].reshape(-1)), keepdims=node["attr"]["keep_dims"]["b"])
        elif op == "MaxPool":
            k, s = _ints(node, "ksize"), _ints(node, "strides")
            x = ins[0]
            if base64.b64decode(node["attr"]["padding"]["s"]) == b"SAME":
                x = same_pad(x, (k[1], k[2]), (s[1], s[2]), -np.inf)
            out = maxpool_nhwc(x, (k[1], k[2]), (s[1], s[2]))
        elif op in _PLAIN:
            out = _PLAIN[op](*ins)
        elif op == "Squeeze":
            dims = _ints(node, "squeeze_dims") if "squeeze_dims" in node.get("attr", {}) else None
            out = np.squeeze(ins[0], axis=tuple(dims) if dims else None)
        elif op == "Pack":
            out = np.stack(ins, axis=int(node["attr"].get("axis", {}).get("i", 0)))
        elif op == "Unpack":
            axis = int(node["attr"].get("axis", {}).get("i", 0))
            out = [np.take(ins[0], i, axis=axis) for i in range(ins[0].shape[axis])]
        elif op == "Split":
            out = np.split(ins[1], int(node["attr"]["num_split"]["i"]), axis=int(ins[0]))
        elif op in ("Sum", "Max"):
            keep = node["attr"].get("keep_dims", {}).get("b", False)
            out = (np.sum if op == "Sum" else np.max)(ins[0], axis=tuple(np.atleast_1d(ins[1]).tolist()), keepdims=keep)
        elif op == "ArgMax":
            out = np.argmax(ins[0], axis=int(ins[1]))
        elif op == "AddN":
            out = sum(ins[1:], ins[0])
        elif op == "Shape":
            out = np.array(ins[0].shape, np.int64)
        elif op == "Sub":
            out = ins[0] - ins[1]
        elif op == "Equal":
            out = ins[0] == ins[1]
        elif op == "Cast":
            out = ins[0].astype(np.float32 if node["attr"]["DstT"]["type"] == "DT_FLOAT" else np.int64)
        elif op == "FloorDiv":
            out = np.floor_divide(ins[0], ins[1])
        elif op == "FloorMod":
            out = np.mod(ins[0], ins[1])
        elif op == "ExpandDims":
            out = np.expand_dims(ins[0], int(ins[1]))
        elif op == "GatherV2":
            out = np.take(ins[0], ins[1], axis=int(ins[2]))
        elif op == "TopKV2":  # values and indices of the k largest along the last axis, largest first
            order = np.argsort(-ins[0], axis=-1, kind="stable")[..., : int(ins[1])]
            out = [np.take_along_axis(ins[0], order, -1), order]
        elif op == "StridedSlice":
            out = ins[0][_strided_index(node, ins[1], ins[2], ins[3])]
        elif op == "LeakyRelu":
            out = np.where(ins[0] >= 0, ins[0], ins[0] * node["attr"]["alpha"]["f"])
        elif op == "Sigmoid":
            out = 1 / (1 + np.exp(-ins[0]))
        elif op == "ConcatV2":
            out = np.concatenate(ins[:-1], axis=int(ins[-1]))
        elif op == "SplitV":
            out = np.split(ins[0], np.cumsum(ins[1])[:-1], axis=int(ins[2]))
        elif op == "ResizeBilinear":
            assert not node["attr"].get("align_corners", {}).get("b", False)
            half = node["attr"].get("half_pixel_centers", {}).get("b", False)
            out = resize_bilinear_half_pixel(ins[0], int(ins[1][0]), int(ins[1][1]), half)
        elif op == "Reshape":
            out = ins[0].reshape(ins[1])
        else:
            raise NotImplementedError(op)
        t[node["name"]] = out
    return {name: t[name] for name in outputs}
