"""A TensorFlow.js graph model (`model.json` + weight shards) as an ONNX graph, built with `onnx.helper`.

No TensorFlow is needed. `read_tfjs` decodes the weights manifest (float16-quantised weights become float32);
`tfjs_to_onnx` maps each TF op onto ONNX ops, keeping TF's own layout: the graph's tensors stay in whatever layout
the TF graph uses, and the NHWC ops (Conv2D, pooling, ResizeBilinear) are wrapped in a Transpose pair that ONNX
Runtime's optimiser cancels against its neighbours. Nodes whose inputs are all constants (shape arithmetic such
as SparseToDense, which ONNX lacks) are folded here with numpy. The ops covered are those of the graphs we use
(NanoDet); any other op is a ValueError naming it.

Resize gets its full `sizes` (N and C from the tensor's shape, then H and W): ONNX Runtime 1.32 crashed on a
Resize that used the `axes` attribute.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np

OPSET = 17
TO_NCHW, TO_NHWC = [0, 3, 1, 2], [0, 2, 3, 1]
_DTYPES = {"float32": np.float32, "int32": np.int32, "bool": np.bool_, "float16": np.float16,
           "uint8": np.uint8, "uint16": np.uint16}
_ELEMENTWISE = {"Add": "Add", "AddV2": "Add", "Sub": "Sub", "Mul": "Mul", "RealDiv": "Div", "Maximum": "Max",
                "Minimum": "Min"}
_UNARY = {"Sigmoid": "Sigmoid", "Relu": "Relu", "Tanh": "Tanh", "Identity": "Identity", "Exp": "Exp"}
_DIRECT = {"Abs": "Abs", "Reciprocal": "Reciprocal", "Less": "Less", "Greater": "Greater", "Equal": "Equal",
           "GreaterEqual": "GreaterOrEqual", "LogicalAnd": "And", "Select": "Where", "Range": "Range", "Size": "Size",
           "Tile": "Tile", "GatherNd": "GatherND", "AddN": "Sum"}  # one ONNX op on the same inputs, in order


def read_tfjs(model_json: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """The model's JSON and its constant tensors by name, decoded from the weight shards beside it."""
    model = json.loads(Path(model_json).read_text())
    consts: dict[str, np.ndarray] = {}
    for group in model["weightsManifest"]:
        blob = b"".join((Path(model_json).parent / p).read_bytes() for p in group["paths"])
        offset = 0
        for w in group["weights"]:
            shape, quant = [int(d) for d in w["shape"]], w.get("quantization")
            stored = np.dtype(_DTYPES[quant["dtype"] if quant else w["dtype"]])
            count = int(np.prod(shape)) if shape else 1
            raw = np.frombuffer(blob, stored, count, offset).reshape(shape)
            offset += count * stored.itemsize
            if quant and "scale" in quant:  # affine uint8/uint16 quantisation
                raw = raw.astype(np.float32) * quant["scale"] + quant.get("min", 0.0)
            consts[w["name"]] = raw.astype(_DTYPES[w["dtype"]])
    return model, consts


def tensor_ref(name: str) -> str:
    """A TF input reference ('node', 'node:0', 'node:1') as our tensor name ('node', 'node', 'node:1')."""
    return name[:-2] if name.endswith(":0") else name


def _attr(node: dict, key: str, default=None):
    a = node.get("attr", {}).get(key)
    if a is None:
        return default
    if "list" in a:
        return [int(i) for i in a["list"].get("i", [])]
    if "s" in a:
        return base64.b64decode(a["s"]).decode()
    for k, cast in (("i", int), ("f", float), ("b", bool)):
        if k in a:
            return cast(a[k])
    return default


def _fold(op: str, args: list[np.ndarray]) -> np.ndarray | None:
    """numpy for an op whose inputs are all constants, or None to emit it as ONNX."""
    if op in ("Add", "AddV2"):
        return args[0] + args[1]
    if op == "Identity":
        return args[0]
    if op == "SparseToDense":  # indices, output shape, values, default
        out = np.full(args[1].reshape(-1), args[3], dtype=args[2].dtype if args[2].size else args[3].dtype)
        idx = args[0].reshape(len(args[2].reshape(-1)), -1) if args[2].size else np.zeros((0, out.ndim), int)
        for i, v in zip(idx, np.broadcast_to(args[2], (len(idx),)), strict=True):
            out[tuple(i)] = v
        return out
    return None


class GraphBuilder:
    """The ONNX graph being built: its nodes, its initializers, and the TF constants it may use."""

    def __init__(self, consts: dict[str, np.ndarray]):
        from onnx import helper

        self.h = helper
        self.consts = consts
        self.nodes: list = []
        self.inits: dict[str, np.ndarray] = {}
        self.count = 0

    def tmp(self, base: str) -> str:
        self.count += 1
        return f"{base}/_onnx{self.count}"

    def const(self, value: np.ndarray, base: str) -> str:
        name = self.tmp(base)
        self.inits[name] = np.asarray(value)
        return name

    def use(self, ref: str) -> str:
        """A tensor name usable as a node input (constants become initializers on first use)."""
        if ref in self.consts and ref not in self.inits:
            value = self.consts[ref]
            self.inits[ref] = value.astype(np.int64) if value.dtype == np.int32 else value
        return ref

    def add(self, op: str, inputs: list[str], outputs: list[str] | None = None, **attrs) -> str:
        outputs = outputs or [self.tmp(inputs[0])]
        self.nodes.append(self.h.make_node(op, inputs, outputs, **attrs))
        return outputs[0]

    def nhwc(self, x: str, out: str, fn) -> None:
        """`fn(nchw_input) -> nchw_output` applied to an NHWC tensor `x`, the result named `out` (NHWC)."""
        y = fn(self.add("Transpose", [x], perm=TO_NCHW))
        self.add("Transpose", [y], [out], perm=TO_NHWC)


def _spatial(node: dict, key: str) -> list[int]:
    vals = _attr(node, key, [1, 1, 1, 1])
    return vals[1:3] if _attr(node, "data_format", "NHWC") == "NHWC" else vals[2:4]


def _pads(node: dict) -> dict:
    padding = _attr(node, "padding", "VALID")
    if padding == "SAME":
        return {"auto_pad": "SAME_UPPER"}
    if padding == "EXPLICIT":
        p = np.asarray(_attr(node, "explicit_paddings")).reshape(4, 2)
        p = p[1:3] if _attr(node, "data_format", "NHWC") == "NHWC" else p[2:4]
        return {"pads": [int(p[0, 0]), int(p[1, 0]), int(p[0, 1]), int(p[1, 1])]}
    return {}


def _fused_ops(node: dict) -> list[str]:
    """The activations etc. grappler fused into a convolution (`_FusedConv2D`: ['BiasAdd', 'Relu'])."""
    return [base64.b64decode(s).decode() for s in node.get("attr", {}).get("fused_ops", {}).get("list", {}).get("s", [])]


def emit_node(b: GraphBuilder, node: dict, ins: list[str], out: str) -> None:
    """One TF node (in the TFJS JSON form) as ONNX nodes writing `out`; also what the frozen-graph SSD converter uses."""
    op, name = node["op"], node["name"]
    nhwc = _attr(node, "data_format", "NHWC") == "NHWC"
    wrap = b.nhwc if nhwc else (lambda x, o, fn: b.add("Identity", [fn(x)], [o]))
    if op in _ELEMENTWISE:
        b.add(_ELEMENTWISE[op], [b.use(i) for i in ins], [out])
    elif op in _UNARY:
        b.add(_UNARY[op], [b.use(ins[0])], [out])
    elif op in _DIRECT:
        b.add(_DIRECT[op], [b.use(i) for i in ins], [out])
    elif op == "LeakyRelu":
        b.add("LeakyRelu", [ins[0]], [out], alpha=_attr(node, "alpha", 0.2))
    elif op == "Relu6":
        b.add("Clip", [ins[0], b.const(np.float32(0), name), b.const(np.float32(6), name)], [out])
    elif op in ("Conv2D", "DepthwiseConv2dNative", "_FusedConv2D", "FusedDepthwiseConv2dNative"):
        w = b.consts[ins[1]]  # HWIO (depthwise: H, W, in, multiplier)
        depthwise = "Depthwise" in op
        fused = _fused_ops(node) if op.startswith(("_Fused", "Fused")) else []
        if fused and (fused[0] != "BiasAdd" or fused[1:] not in ([], ["Relu"], ["Relu6"])):
            raise ValueError(f"{name}: fused ops {fused} are not covered by the converter")
        oihw = w.reshape(*w.shape[:2], 1, -1) if depthwise else w
        weight = [b.const(np.ascontiguousarray(oihw.transpose(3, 2, 0, 1)), name)]
        if fused:
            weight.append(b.use(ins[2]))
        kw = {"strides": _spatial(node, "strides"), "dilations": _spatial(node, "dilations"), **_pads(node)}
        if depthwise:
            kw["group"] = int(w.shape[2])

        def conv(x: str) -> str:
            y = b.add("Conv", [x, *weight], kernel_shape=list(w.shape[:2]), **kw)
            if fused[1:] == ["Relu"]:
                return b.add("Relu", [y])
            if fused[1:] == ["Relu6"]:
                return b.add("Clip", [y, b.const(np.float32(0), name), b.const(np.float32(6), name)])
            return y

        wrap(ins[0], out, conv)
    elif op == "Mean":
        axes = [int(a) for a in b.consts[ins[1]].reshape(-1)]
        b.add("ReduceMean", [ins[0]], [out], axes=axes, keepdims=int(_attr(node, "keep_dims", False)))
    elif op in ("MaxPool", "AvgPool"):
        kw = {"kernel_shape": _spatial(node, "ksize"), "strides": _spatial(node, "strides"), **_pads(node)}
        onnx_op = "MaxPool" if op == "MaxPool" else "AveragePool"
        wrap(ins[0], out, lambda x: b.add(onnx_op, [x], **kw))
    elif op in ("Pad", "PadV2"):
        p = b.consts[ins[1]].astype(np.int64)
        args = [ins[0], b.const(np.concatenate([p[:, 0], p[:, 1]]), name)]
        if op == "PadV2":
            args.append(b.const(b.consts[ins[2]].astype(np.float32).reshape(()), name))
        b.add("Pad", args, [out], mode="constant")
    elif op == "ResizeBilinear":
        if _attr(node, "align_corners", False):
            mode = "align_corners"
        else:
            mode = "half_pixel" if _attr(node, "half_pixel_centers", False) else "asymmetric"
        hw = b.const(b.consts[ins[1]].astype(np.int64).reshape(2), name) if ins[1] in b.consts else ins[1]

        def resize(x: str) -> str:
            nc = b.add("Slice", [b.add("Shape", [x]), b.const(np.array([0]), name), b.const(np.array([2]), name)])
            sizes = b.add("Concat", [nc, hw], axis=0)
            return b.add("Resize", [x, "", "", sizes], mode="linear", coordinate_transformation_mode=mode)

        b.nhwc(ins[0], out, resize)
    elif op == "ConcatV2":
        axis = int(b.consts[ins[-1]])
        b.add("Concat", [b.use(i) for i in ins[:-1]], [out], axis=axis)
    elif op in ("SplitV", "Split"):
        n = _attr(node, "num_split", 1)
        outs = [out] + [f"{name}:{k}" for k in range(1, n)]
        if op == "SplitV":
            sizes = b.consts[ins[1]].astype(np.int64)
            if (sizes < 0).any():
                raise ValueError(f"{name}: SplitV with an inferred (-1) size is not supported")
            b.add("Split", [ins[0], b.const(sizes, name)], outs, axis=int(b.consts[ins[2]]))
        else:
            b.add("Split", [ins[1]], outs, axis=int(b.consts[ins[0]]))
    elif op == "Shape":  # of a tensor in TF's layout, as int64 (every int tensor of ours is)
        b.add("Shape", [ins[0]], [out])
    elif op == "Cast":
        b.add("Cast", [ins[0]], [out], to=1 if node["attr"]["DstT"]["type"] == "DT_FLOAT" else 7)  # FLOAT / INT64
    elif op == "StridedSlice":
        _strided_slice(b, node, ins, out)
    elif op == "Reshape":
        shape = b.const(b.consts[ins[1]].astype(np.int64).reshape(-1), name) if ins[1] in b.consts else ins[1]
        b.add("Reshape", [b.use(ins[0]), shape], [out])
    elif op == "Transpose":
        b.add("Transpose", [ins[0]], [out], perm=[int(v) for v in b.consts[ins[1]].reshape(-1)])
    else:
        _emit_postprocessing(b, node, ins, out)


def _strided_slice(b: GraphBuilder, node: dict, ins: list[str], out: str) -> None:
    """TF StridedSlice as Slice over the input's axes, Squeeze of the shrunk ones, Unsqueeze of the new ones."""
    name = node["name"]
    begin, end, step = (b.consts[i].astype(np.int64).reshape(-1) for i in ins[1:4])
    m = {k: _attr(node, k, 0) for k in ("begin_mask", "end_mask", "shrink_axis_mask", "new_axis_mask", "ellipsis_mask")}
    if m["ellipsis_mask"]:
        raise ValueError(f"{name}: StridedSlice with an ellipsis is not supported")
    big = np.iinfo(np.int64).max
    starts, ends, axes, steps, shrink, new = [], [], [], [], [], []
    axis = out_axis = 0
    for i in range(len(begin)):
        if m["new_axis_mask"] >> i & 1:
            new.append(out_axis)
            out_axis += 1
            continue
        lo = 0 if m["begin_mask"] >> i & 1 else begin[i]
        hi = big if m["end_mask"] >> i & 1 else end[i]
        if m["shrink_axis_mask"] >> i & 1:
            hi = lo + 1
            shrink.append(axis)
        else:
            out_axis += 1
        starts.append(lo), ends.append(hi), axes.append(axis), steps.append(step[i])
        axis += 1
    x = b.add("Slice", [ins[0], *(b.const(np.array(v, np.int64), name) for v in (starts, ends, axes, steps))])
    if shrink:
        x = b.add("Squeeze", [x, b.const(np.array(shrink, np.int64), name)])
    if new:
        x = b.add("Unsqueeze", [x, b.const(np.array(new, np.int64), name)])
    b.add("Identity", [x], [out])


def _emit_postprocessing(b: GraphBuilder, node: dict, ins: list[str], out: str) -> None:
    """The index and reduction ops of in-graph decoding (MoveNet multipose's people from its heads)."""
    op, name = node["op"], node["name"]
    if op == "Fill":
        b.add("Expand", [b.use(ins[1]), b.use(ins[0])], [out])
    elif op == "FloorDiv":  # integers here are indices (never negative), where Div's truncation is the floor
        quotient = b.add("Div", [b.use(ins[0]), b.use(ins[1])], None if node["attr"]["T"]["type"] == "DT_FLOAT" else [out])
        if node["attr"]["T"]["type"] == "DT_FLOAT":
            b.add("Floor", [quotient], [out])
    elif op == "SquaredDifference":
        diff = b.add("Sub", [b.use(ins[0]), b.use(ins[1])])
        b.add("Mul", [diff, diff], [out])
    elif op == "Squeeze":
        dims = _attr(node, "squeeze_dims", [])
        b.add("Squeeze", [ins[0], b.const(np.array(dims, np.int64), name)] if dims else [ins[0]], [out])
    elif op == "Pack":
        axis = b.const(np.array([_attr(node, "axis", 0)], np.int64), name)
        b.add("Concat", [b.add("Unsqueeze", [b.use(i), axis]) for i in ins], [out], axis=_attr(node, "axis", 0))
    elif op == "Unpack":
        n, axis = _attr(node, "num"), _attr(node, "axis", 0)
        parts = [b.tmp(name) for _ in range(n)]
        b.add("Split", [ins[0], b.const(np.ones(n, np.int64), name)], parts, axis=axis)
        for k, part in enumerate(parts):
            b.add("Squeeze", [part, b.const(np.array([axis], np.int64), name)], [out if k == 0 else f"{name}:{k}"])
    elif op == "ExpandDims":
        b.add("Unsqueeze", [b.use(ins[0]), b.const(b.consts[ins[1]].astype(np.int64).reshape(1), name)], [out])
    elif op == "TopKV2":
        k = b.const(b.consts[ins[1]].astype(np.int64).reshape(1), name)
        b.add("TopK", [ins[0], k], [out, f"{name}:1"], axis=-1, largest=1, sorted=1)
    elif op == "ArgMax":
        b.add("ArgMax", [ins[0]], [out], axis=int(b.consts[ins[1]]), keepdims=0)
    elif op in ("Sum", "Max"):
        axes = b.consts[ins[1]].astype(np.int64).reshape(-1)
        keep = int(_attr(node, "keep_dims", False))
        if op == "Sum":
            b.add("ReduceSum", [ins[0], b.const(axes, name)], [out], keepdims=keep)
        else:
            b.add("ReduceMax", [ins[0]], [out], axes=[int(a) for a in axes], keepdims=keep)
    else:
        raise ValueError(f"TFJS op {op} ({name}) is not covered by the converter")


def _dims(shape: dict) -> list[int | None] | None:
    """A TF TensorShapeProto (JSON) as ONNX dims (None: unknown size or rank)."""
    if not shape or shape.get("unknownRank"):
        return None
    return [int(d["size"]) if int(d.get("size", -1)) >= 0 else None for d in shape.get("dim", [])]


def _needed(nodes: list[dict], outputs: list[str]) -> set[str]:
    """The names of the nodes the tensors `outputs` depend on."""
    inputs = {n["name"]: n.get("input", []) for n in nodes}
    seen: set[str] = set()
    todo = list(outputs)
    while todo:
        name = todo.pop().lstrip("^").split(":")[0]
        if name not in seen:
            seen.add(name)
            todo += inputs[name]
    return seen


def tfjs_to_onnx(model_json: Path, producer: str = "foresight-tfjs_onnx", outputs: list[str] | None = None):
    """The ONNX ModelProto of a TFJS graph model: inputs and outputs by the signature's names without ':0'
    (float32; the input shapes as declared); `outputs` (signature names) keeps only those and what they need."""
    from onnx import TensorProto, checker, helper, numpy_helper

    model, consts = read_tfjs(model_json)
    b = GraphBuilder(dict(consts))
    inputs = []
    nodes = model["modelTopology"]["node"]
    needed = _needed(nodes, outputs) if outputs else {n["name"] for n in nodes}
    for node in nodes:
        op, name = node["op"], node["name"]
        if name not in needed:
            continue
        ins = [tensor_ref(i) for i in node.get("input", []) if not i.startswith("^")]
        if op == "Const":
            if name not in b.consts:
                raise ValueError(f"constant {name} has no weights in the manifest")
            continue
        if op == "Placeholder":
            inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, _dims(node["attr"]["shape"]["shape"])))
            continue
        if ins and all(i in b.consts for i in ins):
            folded = _fold(op, [b.consts[i] for i in ins])
            if folded is not None:
                b.consts[name] = folded
                continue
        emit_node(b, node, ins, name)
    sig = model.get("signature", {}).get("outputs") or {nodes[-1]["name"]: {}}
    # a node's name, not in the signature: an NHWC tensor of unknown size (the checker wants a rank)
    unknown = {"tensorShape": {"dim": [{"size": "-1"}] * 4}}
    sig = {k: sig.get(k, unknown) for k in outputs} if outputs else sig
    outs = [helper.make_tensor_value_info(tensor_ref(v.get("name", k)), TensorProto.FLOAT, _dims(v.get("tensorShape", {})))
            for k, v in sorted(sig.items())]
    inits = [numpy_helper.from_array(v, n) for n, v in b.inits.items()]
    graph = helper.make_graph(b.nodes, Path(model_json).stem, inputs, outs, inits)
    proto = helper.make_model(graph, producer_name=producer, opset_imports=[helper.make_opsetid("", OPSET)])
    proto.ir_version = 8
    checker.check_model(proto)
    return proto
