"""SSD-MobileNetV2 COCO as ONNX for ONNX Runtime, converted once from the frozen TF graph (no TensorFlow), and
the SSD decoding that OpenCV's `DetectionOutput` layer did, in numpy.

OpenCV's DNN module spent 77 ms a frame on one thread, half of it in the box predictors' 3x3 convolutions
(`benchmarks/ssd_layers.py`); ONNX Runtime runs the same convolutions in under half the time. The topology is
OpenCV's text graph of the model (`.pbtxt`: the TF graph without its preprocessing and post-processing loops),
the weights are the frozen graph's (`.pb`), and each batch norm is folded into the convolution before it. The
graph ends at the box encodings and the class scores; the 1917 anchors come from OpenCV's `PriorBox` layers,
computed once at conversion and stored in the file as a third output.

Decoding: each anchor (x0, y0, x1, y1 and variances 0.1, 0.1, 0.2, 0.2) shifts by its encoding (TF's order:
centre y, x, then log height, width); per class, scores above 0.01, their best 100, non-maximum suppression
at IoU 0.6; then the best 100 over all classes: the text graph's `DetectionOutput` settings.
"""

from __future__ import annotations

import base64
from pathlib import Path

import numpy as np

SIZE = 300
NUM_CLASSES = 91  # background + COCO-90 ids
CONF_FLOOR, TOP_K, NMS_IOU, KEEP_TOP_K = 0.01, 100, 0.6, 100
VARIANCES = np.array([0.1, 0.1, 0.2, 0.2], np.float32)
OUTPUTS = ("BoxEncodingPredictor/concat", "ClassPredictor/concat/sigmoid")
CONVERTER_VERSION = "1"  # bump when the conversion's output changes: a new cached ONNX file
_SKIPPED = {"PriorBox", "DetectionOutput", "Placeholder", "Const"}  # PriorBox/concat too: the anchors are stored


def ssd_onnx() -> Path:
    """SSD-MobileNetV2's ONNX file in the cache, converted from the package's files the first time (by content)."""
    from models.cache import file_sha256
    from models.encoders.weights import ssd_files
    from models.onnx_runtime import export_once, exported_file

    pb, pbtxt = ssd_files()
    path = exported_file("ssd-mobilenetv2", file_sha256(pb), file_sha256(pbtxt), CONVERTER_VERSION)

    def export(tmp: str) -> None:
        Path(tmp).write_bytes(convert(pb, pbtxt).SerializeToString())

    return export_once(path, export, "SSD-MobileNetV2 (frozen TF graph)")


def _fold_batch_norms(nodes: list[dict], consts: dict[str, np.ndarray]) -> list[dict]:
    """Each FusedBatchNorm that follows a convolution folded into it: the convolution, with scaled weights and
    a bias, takes the batch norm's name."""
    by_name = {n["name"]: n for n in nodes}
    dropped, out = set(), []
    for n in nodes:
        if n["op"] != "FusedBatchNorm":
            continue
        conv = by_name[n["input"][0]]
        if conv["op"] not in ("Conv2D", "DepthwiseConv2dNative"):
            raise ValueError(f"{n['name']}: a batch norm after {conv['op']} is not covered")
        gamma, beta, mean, var = (consts[i] for i in n["input"][1:])
        scale = gamma / np.sqrt(var + n["attr"]["epsilon"]["f"])
        w = consts[conv["input"][1]]
        consts[n["name"] + "/folded_w"] = (w * scale.reshape(w.shape[2], w.shape[3])
                                          if conv["op"] == "DepthwiseConv2dNative" else w * scale).astype(np.float32)
        consts[n["name"] + "/folded_b"] = (beta - mean * scale).astype(np.float32)
        fused = "_FusedConv2D" if conv["op"] == "Conv2D" else "FusedDepthwiseConv2dNative"
        by_name[n["name"]] = {**conv, "name": n["name"], "op": fused,
                              "input": [conv["input"][0], n["name"] + "/folded_w", n["name"] + "/folded_b"],
                              "attr": {**conv["attr"], "fused_ops": {"list": {"s": [base64.b64encode(b"BiasAdd").decode()]}}}}
        dropped.add(conv["name"])
    for n in nodes:
        if n["name"] not in dropped:
            out.append(by_name[n["name"]])
    return out


def _priors(pb: Path, pbtxt: Path) -> np.ndarray:
    """The anchors [2, 1917 * 4] (boxes, then variances) of OpenCV's PriorBox layers at the 300x300 input."""
    import cv2

    net = cv2.dnn.readNetFromTensorflow(str(pb), str(pbtxt))
    net.setInput(np.zeros((1, 3, SIZE, SIZE), np.float32))
    return net.forward("PriorBox/concat")[0].astype(np.float32)


def convert(pb: Path, pbtxt: Path):
    """The ONNX ModelProto: input `image` [N, 3, 300, 300] (RGB 0..255, as `cv2.dnn.blobFromImages` gives),
    outputs `boxes` [N, 1917 * 4], `scores` [N, 1917 * 91] and `priors` [2, 1917 * 4]."""
    from onnx import TensorProto, checker, helper, numpy_helper

    from models.encoders.tf_frozen import frozen_constants, text_graph
    from models.encoders.tfjs_onnx import OPSET, TO_NHWC, GraphBuilder, emit_node, tensor_ref

    nodes = text_graph(pbtxt)
    defined = {n["name"] for n in nodes}
    consts = frozen_constants(pb, {tensor_ref(i) for n in nodes for i in n["input"]} - defined)
    consts.update({n["name"]: n["value"].reshape(()) for n in nodes if n["op"] == "Const"})
    b = GraphBuilder(consts)
    b.add("Transpose", ["image"], ["image_tensor"], perm=TO_NHWC)
    for node in _fold_batch_norms(nodes, consts):
        op, ins = node["op"], [tensor_ref(i) for i in node["input"]]
        if op in _SKIPPED or node["name"] == "PriorBox/concat":
            continue
        if op == "BiasAdd":
            node = {**node, "op": "Add"}
        if op == "Flatten":
            b.add("Reshape", [ins[0], b.const(np.array([0, -1], np.int64), node["name"])], [node["name"]])
            continue
        emit_node(b, node, ins, node["name"])
    b.add("Identity", [OUTPUTS[0]], ["boxes"])
    b.add("Identity", [OUTPUTS[1]], ["scores"])
    b.inits["priors_value"] = _priors(pb, pbtxt)
    b.add("Identity", ["priors_value"], ["priors"])
    graph = helper.make_graph(
        b.nodes, "ssd_mobilenet_v2_coco",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [None, 3, SIZE, SIZE])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [None, None]) for n in ("boxes", "scores", "priors")],
        [numpy_helper.from_array(v, n) for n, v in b.inits.items()])
    proto = helper.make_model(graph, producer_name="foresight-ssd_onnx", opset_imports=[helper.make_opsetid("", OPSET)])
    proto.ir_version = 8
    checker.check_model(proto)
    return proto


def decode(boxes: np.ndarray, scores: np.ndarray, priors: np.ndarray) -> np.ndarray:
    """One image's detections as `DetectionOutput` rows (0, COCO-90 id, score, x0, y0, x1, y1), best first."""
    import cv2

    anchors = priors[0].reshape(-1, 4)
    enc = boxes.reshape(-1, 4)[:, [1, 0, 3, 2]] * VARIANCES  # TF encodes (y, x, h, w); the anchors are (x, y)
    wh = anchors[:, 2:] - anchors[:, :2]
    centre = (anchors[:, :2] + anchors[:, 2:]) / 2 + enc[:, :2] * wh
    size = np.exp(enc[:, 2:]) * wh
    decoded = np.concatenate([centre - size / 2, centre + size / 2], axis=1)
    conf = scores.reshape(-1, NUM_CLASSES)
    rows = []
    for cls in np.flatnonzero((conf[:, 1:] > CONF_FLOOR).any(axis=0)) + 1:
        idx = np.flatnonzero(conf[:, cls] > CONF_FLOOR)
        idx = idx[np.argsort(-conf[idx, cls], kind="stable")[:TOP_K]]
        xywh = np.concatenate([decoded[idx, :2], decoded[idx, 2:] - decoded[idx, :2]], axis=1)
        keep = cv2.dnn.NMSBoxes(xywh.tolist(), conf[idx, cls].tolist(), CONF_FLOOR, NMS_IOU)
        for k in np.asarray(keep, int).reshape(-1):
            i = idx[k]
            rows.append((0.0, float(cls), float(conf[i, cls]), *decoded[i].tolist()))
    rows.sort(key=lambda r: -r[2])
    return np.array(rows[:KEEP_TOP_K], np.float32).reshape(-1, 7)
