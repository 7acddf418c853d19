"""Where SSD-MobileNetV2's time goes, and what ONNX Runtime saves: OpenCV's DNN module (what the detector ran on
before) with its own per-layer profile, against the default detector (`SsdDetector`, the converted graph on ONNX
Runtime), alternated on one frame of the demo, one thread each. The detector is the largest model cost on a
still camera's keep-alive looks and on a tracked stream's 4 detections a second.

    python -m benchmarks.ssd_layers [--runs 7] [--top 8]
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def demo_frame():
    import av

    with av.open(str(ROOT / "data" / "demo.mp4")) as c:
        for i, f in enumerate(c.decode(video=0)):
            if i == 100:
                return f.to_ndarray(format="rgb24")
    raise SystemExit("data/demo.mp4 has fewer than 101 frames")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--top", type=int, default=8)
    args = ap.parse_args()
    if args.runs < 1 or args.top < 1:
        ap.error("--runs and --top must be at least 1")
    import cv2

    from models.encoders.ssd import SsdDetector
    from models.encoders.weights import ssd_files

    det = SsdDetector()  # ONNX Runtime, one thread, as in the pipeline
    cv2.setNumThreads(1)
    net = cv2.dnn.readNetFromTensorflow(*(str(f) for f in ssd_files()))
    frame = demo_frame()
    blob = cv2.dnn.blobFromImages([frame], 1.0, (300, 300), swapRB=False, crop=False)

    def opencv() -> None:
        net.setInput(blob)
        net.forward()

    opencv(), det.detect_many([frame])  # the first passes allocate
    walls, ort_walls, layer_ms = [], [], None
    names = net.getLayerNames()
    for _ in range(args.runs):
        t0 = time.perf_counter()
        opencv()
        t1 = time.perf_counter()
        det.detect_many([frame])
        walls.append(1000 * (t1 - t0))
        ort_walls.append(1000 * (time.perf_counter() - t1))
        _, per_layer = net.getPerfProfile()
        ms = per_layer.ravel() * 1000 / cv2.getTickFrequency()
        layer_ms = ms if layer_ms is None else layer_ms + ms
    layer_ms = layer_ms / args.runs
    total = float(layer_ms.sum())
    cv_ms, ort_ms = statistics.median(walls), statistics.median(ort_walls)
    print(f"SSD-MobileNetV2 on a {frame.shape[1]}x{frame.shape[0]} frame (300x300 input), 1 thread, medians of "
          f"{args.runs} alternated calls: OpenCV DNN {cv_ms:.1f} ms, ONNX Runtime with decoding {ort_ms:.1f} ms "
          f"(ratio {ort_ms / cv_ms:.2f})")
    print(f"OpenCV's {total:.1f} ms in layers (mean):")
    by_type: collections.Counter = collections.Counter()
    for name, ms in zip(names, layer_ms, strict=True):
        by_type[net.getLayer(net.getLayerId(name)).type] += float(ms)
    print("by layer type: " + ", ".join(f"{k} {v:.1f} ms" for k, v in by_type.most_common(4)))
    for i in layer_ms.argsort()[::-1][:args.top]:
        layer = net.getLayer(net.getLayerId(names[i]))
        shape = "x".join(str(d) for d in layer.blobs[0].shape) if layer.blobs else "-"
        print(f"{layer_ms[i]:6.2f} ms {100 * layer_ms[i] / total:5.1f} %  {names[i]} (weights {shape})")


if __name__ == "__main__":
    main()
