"""MediaPipe's native log lines stay off the terminal; everything else written meanwhile still arrives."""

import os
import threading

import numpy as np

from models.native_logs import is_noise, quiet_native_logs

LITERT_INFO = "INFO: [environment.cc:36] Creating LiteRT environment with options\n"
LITERT_WARNING = "WARNING: [model_load.cc:402] Sparsity tensors may not yet be fully supported.\n"
ABSL_WARNING = ("W0000 00:00:1796117143.036758    6131 face_landmarker_graph.cc:181] Sets FaceBlendshapesGraph "
                "acceleration to xnnpack by default.\n")


def test_known_formats_are_noise_and_errors_are_not():
    for line in (LITERT_INFO, LITERT_WARNING, ABSL_WARNING, "INFO: Created TensorFlow Lite XNNPACK delegate for CPU.\n",
                 "WARNING: Logging before InitGoogle() is written to STDERR\n"):
        assert is_noise(line), line
    for line in ("E0000 00:00:1796117143.036758    6131 graph.cc:12] Failed to open model\n",
                 "ERROR: [model_load.cc:40] cannot read the model\n", "Traceback (most recent call last):\n",
                 "progress: 50 %\n", "WARNING: the clip has no audio\n"):
        assert not is_noise(line), line


def test_block_drops_noise_and_replays_the_rest_in_order(capfd):
    with quiet_native_logs():
        os.write(2, LITERT_INFO.encode())
        os.write(2, b"kept line one\n")
        with quiet_native_logs():  # re-entrant: the inner block does not end the capture
            os.write(2, ABSL_WARNING.encode())
        os.write(2, b"E0000 00:00:1.0    1 graph.cc:12] a real error\n")
        worker = threading.Thread(target=lambda: os.write(2, b"from another thread\n"))
        worker.start()
        worker.join()
    os.write(2, LITERT_WARNING.encode())  # outside any block: untouched
    err = capfd.readouterr().err
    assert err.splitlines() == ["kept line one", "E0000 00:00:1.0    1 graph.cc:12] a real error",
                                "from another thread", LITERT_WARNING.strip()]


def test_env_keeps_everything(capfd, monkeypatch):
    monkeypatch.setenv("FORESIGHT_NATIVE_LOGS", "1")
    with quiet_native_logs():
        os.write(2, LITERT_INFO.encode())
    assert capfd.readouterr().err == LITERT_INFO


def test_mediapipe_pose_and_faces_build_run_and_close_quietly(capfd):
    from models.encoders.visual import FaceCounter, PoseTracker

    pose, faces = PoseTracker(model="mediapipe"), FaceCounter()  # MediaPipe's own logs
    frame = np.zeros((360, 640, 3), np.uint8)
    pose.track([frame, frame], [0.0, 0.5])
    faces.detect(frame)
    pose.close()
    faces.close()
    err = capfd.readouterr().err
    assert not [line for line in err.splitlines() if "LiteRT" in line or ".cc:" in line], err


ALIGNMENT = (b"W0000 00:00:1796578777.098347   18938 inference_runner_litert.cc:1433] Input tensor memory is not "
             b"aligned according to LiteRt's memory alignment requirements. Reallocating memory and copying data.\n")


class WarnsEachCall:
    """The real landmarker, writing LiteRT's alignment warning on every call as it did on a CI machine (whether
    it does depends on where the runtime's allocator puts the input tensor, so this machine may never see it)."""

    def __init__(self, real):
        self.real = real

    def __getattr__(self, name):
        call = getattr(self.real, name)
        if name not in ("detect", "detect_for_video"):
            return call

        def warned(*args):
            os.write(2, ALIGNMENT)
            return call(*args)
        return warned


def test_a_warning_on_any_later_inference_stays_quiet_and_other_output_still_arrives(capfd):
    from models.encoders.visual import FaceCounter, PoseTracker

    pose, faces = PoseTracker(model="mediapipe"), FaceCounter()
    pose.landmarker, faces.landmarker = WarnsEachCall(pose.landmarker), WarnsEachCall(faces.landmarker)
    frame = np.zeros((360, 640, 3), np.uint8)
    for i in range(3):
        pose.track([frame, frame], [i, i + 0.5])
        faces.detect(frame)
        os.write(2, b"a line of our own\n")
    pose.close()
    faces.close()
    assert capfd.readouterr().err.splitlines() == ["a line of our own"] * 3
