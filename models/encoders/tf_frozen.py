"""A frozen TensorFlow graph read without TensorFlow: the constants of a `GraphDef` (.pb) decoded from the
protobuf wire format, and OpenCV's text graph (.pbtxt, protobuf text format) as nodes in the TFJS JSON form that
`tfjs_onnx` converts. Only what SSD-MobileNetV2's pair of files uses is covered: float and int32 constants, and
the text graph's nodes with list, string, int, float and bool attributes.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

import numpy as np

_DT = {1: np.float32, 3: np.int32}  # TF DataType enum: DT_FLOAT, DT_INT32


def _varint(buf: memoryview, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7


def _fields(buf: memoryview):
    """(field number, wire type, value) of one message: ints for varints, memoryviews for the rest."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 2:
            size, i = _varint(buf, i)
            value, i = buf[i:i + size], i + size
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        else:
            raise ValueError(f"protobuf wire type {wire} is not covered")
        yield num, wire, value


def _packed_varints(buf: memoryview) -> list[int]:
    out, i = [], 0
    while i < len(buf):
        v, i = _varint(buf, i)
        out.append(v - (1 << 64) if v >= 1 << 63 else v)
    return out


def _tensor(buf: memoryview) -> np.ndarray:
    """A TensorProto: dtype (1), shape (2: dims 2, each size 1), tensor_content (4), float_val (5), int_val (7);
    one listed value fills the whole shape, as TF allows."""
    dtype, shape, content, values = None, [], None, []
    for num, wire, v in _fields(buf):
        if num == 1:
            dtype = _DT.get(v)
        elif num == 2:
            for dn, _, dim in _fields(v):
                if dn == 2:
                    shape.append(next((s for n, _, s in _fields(dim) if n == 1), 0))
        elif num == 4:
            content = bytes(v)
        elif num == 5:
            values.extend(np.frombuffer(bytes(v), "<f4").tolist())
        elif num == 7:
            values.extend(_packed_varints(v) if wire == 2 else [v])
    if dtype is None:
        raise ValueError("a constant of a dtype other than float32 or int32")
    if content is not None:
        return np.frombuffer(content, dtype).reshape(shape).copy()
    count = int(np.prod(shape)) if shape else 1
    flat = np.array(values, dtype)
    return (np.broadcast_to(flat, (count,)) if flat.size == 1 else flat).reshape(shape).copy()


def frozen_constants(pb: Path, names: set[str]) -> dict[str, np.ndarray]:
    """The Const nodes of a frozen GraphDef named in `names`, by name (GraphDef.node 1; NodeDef name 1, op 2,
    attr 5 with key 1 and AttrValue 2, whose tensor is field 8)."""
    data = memoryview(Path(pb).read_bytes())
    out: dict[str, np.ndarray] = {}
    for num, _, node in _fields(data):
        if num != 1:
            continue
        name = op = None
        attrs = []
        for n, _, v in _fields(node):
            if n == 1:
                name = bytes(v).decode()
                if name not in names:
                    break
            elif n == 2:
                op = bytes(v).decode()
            elif n == 5:
                attrs.append(v)
        if name not in names or op != "Const":
            continue
        for entry in attrs:
            parts = {n: v for n, _, v in _fields(entry)}
            if bytes(parts.get(1, b"")) == b"value":
                out[name] = next(_tensor(t) for n, _, t in _fields(parts[2]) if n == 8)
    missing = names - out.keys()
    if missing:
        raise ValueError(f"{pb} lacks the constants {sorted(missing)[:3]}")
    return out


_TOKEN = re.compile(r'\s*(?:([A-Za-z_][A-Za-z0-9_]*)|("(?:[^"\\]|\\.)*")|([-+0-9.eE]+)|([{}:]))')


def _text_message(tokens: list[str], i: int) -> tuple[dict, int]:
    msg: dict[str, list] = {}
    while i < len(tokens) and tokens[i] != "}":
        key = tokens[i]
        if tokens[i + 1] == ":" and tokens[i + 2] != "{":
            value, i = tokens[i + 2], i + 3
        else:
            i += 2 if tokens[i + 1] == "{" else 3
            value, i = _text_message(tokens, i)
            i += 1  # the closing brace
        msg.setdefault(key, []).append(value)
    return msg, i


def _scalar(token: str):
    if token.startswith('"'):
        return token[1:-1].encode().decode("unicode_escape")
    if token in ("true", "false"):
        return token == "true"
    return float(token) if any(c in token for c in ".eE") else int(token) if token.lstrip("+-").isdigit() else token


def text_graph(pbtxt: Path) -> list[dict]:
    """The nodes of a GraphDef in protobuf text format, each {name, op, input, attr} with attributes as the
    TFJS JSON has them ({"list": {"i": [...]}}, {"s": base64}, {"i"|"f"|"b": value}); a Const node's value, when
    the text carries it, as a numpy array under "value"."""
    text = Path(pbtxt).read_text()
    tokens, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip():
                raise ValueError(f"{pbtxt}: cannot read text at offset {pos}")
            break
        tokens.append(next(g for g in m.groups() if g is not None))
        pos = m.end()
    graph, _ = _text_message(tokens, 0)
    nodes = []
    for raw in graph.get("node", []):
        node = {"name": _scalar(raw["name"][0]), "op": _scalar(raw["op"][0]),
                "input": [_scalar(t) for t in raw.get("input", [])], "attr": {}}
        for a in raw.get("attr", []):
            key, value = _scalar(a["key"][0]), a["value"][0]
            if "list" in value:
                node["attr"][key] = {"list": {"i": [_scalar(t) for t in value["list"][0].get("i", [])]}}
            elif "s" in value:
                node["attr"][key] = {"s": base64.b64encode(_scalar(value["s"][0]).encode()).decode()}
            elif "tensor" in value:
                node["value"] = _text_tensor(value["tensor"][0])
            else:
                for k in ("i", "f", "b"):
                    if k in value:
                        node["attr"][key] = {k: _scalar(value[k][0])}
        nodes.append(node)
    return nodes


def _text_tensor(t: dict) -> np.ndarray:
    dims = [_scalar(d["size"][0]) for d in t.get("tensor_shape", [{}])[0].get("dim", [])]
    if "int_val" in t:
        return np.array([_scalar(v) for v in t["int_val"]], np.int32).reshape(dims or ())
    return np.array([_scalar(v) for v in t.get("float_val", [])], np.float32).reshape(dims or ())
