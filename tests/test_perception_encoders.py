"""The embedded stack on known pictures and sounds, the registry, the hf encoder with tiny random models,
and the feature cache in PreFM's layout."""

from __future__ import annotations

import json

import numpy as np
import pytest

from models.encoders.audio_features import AUDIO_DIM, AudioFeatures, log_mel, mel_filterbank
from models.encoders.registry import get_encoder
from models.encoders.visual import VISUAL_DIM, VisualAnalyzer, posture
from models.errors import BadInput
from training.media.synth import ken_burns, sample_image, sound, speak

RATE = 16_000


@pytest.fixture(scope="module")
def visual():
    va = VisualAnalyzer()
    yield va
    va.close()


@pytest.fixture(scope="module")
def pictures():
    return {n: ken_burns(sample_image(n), 640, 360, 0.5) for n in ("astronaut", "camera", "chelsea")}


def test_people_found_and_cat_is_not_a_person(visual, pictures):
    visual.reset()
    people = visual.analyze([pictures["camera"]] * 2, [0.0, 0.5])
    assert people["persons"] >= 1
    assert any(d["label"] == "person" and 0 < d["score"] <= 1 for d in people["detections"])
    x0, y0, x1, y1 = people["detections"][0]["box"]
    assert 0 <= x0 < x1 <= 640 and 0 <= y0 < y1 <= 360
    astronaut = visual.analyze([pictures["astronaut"]] * 2, [1.0, 1.5])
    assert astronaut["faces"] == 1 and astronaut["persons"] >= 1
    assert len(astronaut["pose"][0]["landmarks"]) == 17  # COCO's keypoints: MoveNet multipose, the default pose
    assert astronaut["pose"][0]["posture"] in ("standing", "sitting", "lying", "unknown")
    cat = visual.analyze([pictures["chelsea"]] * 2, [2.0, 2.5])
    assert cat["persons"] == 0 and cat["faces"] == 0
    json.dumps(VisualAnalyzer.readable(cat))  # builtins only


def test_a_posture_only_for_a_detected_person(visual, pictures):
    """MediaPipe's landmarker, once it has seen a person, draws skeletons on the cat and the coffee cup (its VIDEO
    mode tracks on; `reset` does not clear that); no person is there, so no posture. MoveNet, the default, draws
    none there. On the astronaut (a face the detector misses) and the camera man (a detector box) the pose is tied
    to that person by box, and the person count agrees with `objects["person"]`."""
    from models.encoders.visual_config import VisualConfig

    mediapipe = VisualAnalyzer(VisualConfig(pose_model="mediapipe"))
    try:
        _posture_only_for_a_person(mediapipe, visual, pictures)
    finally:
        mediapipe.close()  # a MediaPipe graph left open hangs the interpreter's exit


def _posture_only_for_a_person(mediapipe, visual, pictures) -> None:
    from models.encoders.people import inside, iou

    for k, name in enumerate(("astronaut", "chelsea", "coffee")):
        for analyzer in (mediapipe, visual):
            analyzer.reset()
            out = analyzer.analyze([ken_burns(sample_image(name), 640, 360, 0.5)] * 2, [10.0 + k, 10.5 + k])
            if name != "astronaut":
                assert bool(out["_pose_all"]) == (analyzer is mediapipe), (name, analyzer.config.pose_model)
                assert out["pose"] == [] and out["persons"] == 0 and "person" not in out["objects"]
    for k, name in enumerate(("astronaut", "camera")):
        for analyzer in (mediapipe, visual):
            analyzer.reset()
            out = analyzer.analyze([pictures[name]] * 2, [20.0 + k, 20.5 + k])
            assert out["persons"] == out["objects"]["person"] == len(out["people"]) == 1
            assert len(out["pose"]) == 1 and out["pose"][0]["person"] == 0
            box, person = out["pose"][0]["box"], out["people"][0]["box"]
            assert iou(box, person) >= 0.3 or inside(box, person) >= 0.6 or out["people"][0]["source"] == "face"


def test_detector_batch_across_streams_gives_each_frame_its_own_detections(visual, pictures):
    """A stage host batches several streams' key frames (one forward pass); each stream's call then finds exactly
    what it would have found alone, and frames of different sizes are each boxed in their own pixels."""
    import cv2

    from pipelines.stages.visual import VisualStage

    det = visual.detector
    frames = [pictures["camera"], pictures["chelsea"], cv2.resize(pictures["camera"], (320, 240))]
    alone = [det.detect(f) for f in frames]
    assert any(d["label"] == "person" for d in alone[0]) and any(d["label"] == "person" for d in alone[2])
    assert det.detect_many(frames) == alone
    served = det.served_from_batch
    VisualStage.prefetch([(det, f) for f in frames])  # what a stage host does for a cohort of ready calls
    assert [det.detect(f) for f in frames] == alone and det.served_from_batch == served + 3
    assert det.detect(frames[0]) == alone[0] and det.served_from_batch == served + 3  # used once, then run again
    assert all(0 <= d["box"][2] <= 320 and 0 <= d["box"][3] <= 240 for d in alone[2])


def test_scene_cut_motion_and_camera_trouble(visual, pictures):
    import cv2

    visual.reset()
    a, b = pictures["astronaut"], pictures["chelsea"]
    first = visual.analyze([a, a], [0.0, 0.5])
    assert first["camera_trouble"] is None and first["motion"] == 0.0
    cut = visual.analyze([b, b], [1.0, 1.5])
    assert cut["scene_cut"] and cut["motion"] > 0.02
    steady = visual.analyze([b, b], [2.0, 2.5])
    assert not steady["scene_cut"]
    assert visual.analyze([(a * 0.05).astype(np.uint8)] * 2, [3.0, 3.5])["camera_trouble"] == "dark"
    assert visual.analyze([np.full_like(a, 140)] * 2, [4.0, 4.5])["camera_trouble"] == "covered"
    assert visual.analyze([cv2.GaussianBlur(a, (0, 0), 6)] * 2, [5.0, 5.5])["camera_trouble"] == "blurred"
    troubles = [visual.analyze([a, a], [6.0 + k, 6.5 + k])["camera_trouble"] for k in range(4)]
    assert troubles[0] is None and troubles[-1] == "frozen"


def test_vertical_velocity_follows_a_falling_person(visual, pictures):
    """The same person shifted down the frame second by second: positive (downward) velocity, same identity."""
    visual.reset()
    canvas = np.zeros((360 * 2, 640, 3), np.uint8)
    person = ken_burns(sample_image("astronaut"), 320, 360, 0.5)
    vel, ids = [], []
    for k in range(3):
        frames = []
        for j in range(2):
            c = canvas.copy()
            top = 40 * (2 * k + j)
            c[top:top + 360, 160:480] = person
            frames.append(c)
        out = visual.analyze(frames, [k, k + 0.5])
        assert out["pose"], "pose lost the person"
        vel.append(out["pose"][0]["vertical_velocity"])
        ids.append(out["pose"][0]["id"])
    assert vel[1] > 0.1 and vel[2] > 0.1
    assert len(set(ids)) == 1


def test_posture_rules():
    class P:
        def __init__(self, x, y, v=1.0):
            self.x, self.y, self.visibility = x, y, v

    def body(shoulder, hip, knee):
        lms = [P(0.5, 0.5, 0.0) for _ in range(33)]
        for i, pt in ((11, shoulder), (12, shoulder), (23, hip), (24, hip), (25, knee), (26, knee)):
            lms[i] = P(*pt)
        return lms

    assert posture(body((0.5, 0.2), (0.5, 0.5), (0.5, 0.75))) == "standing"
    assert posture(body((0.5, 0.2), (0.5, 0.5), (0.7, 0.52))) == "sitting"
    assert posture(body((0.2, 0.5), (0.5, 0.52), (0.7, 0.53))) == "lying"


def test_visual_rejects_bad_frames(visual):
    with pytest.raises(ValueError, match="uint8"):
        visual.analyze([np.zeros((10, 10), np.float32)])
    assert visual.analyze([]) is None
    assert not visual.vector(None).any() and visual.vector(None).shape == (VISUAL_DIM,)


def test_log_mel_matches_a_tone():
    fb = mel_filterbank()
    assert fb.shape == (201, 64) and (fb >= 0).all()
    t = np.arange(RATE) / RATE
    mel = log_mel(np.sin(2 * np.pi * 1000 * t).astype(np.float32))
    assert mel.shape == (98, 64)
    peak_hz = (np.argmax(fb, axis=0) * RATE / 400)[mel.mean(0).argmax()]
    assert 850 < peak_hz < 1150


def test_audio_features_tags_speech_and_alarm():
    af = AudioFeatures()
    speech = speak("Hello there, this is a test of the speech detector.")[:RATE]
    out = af.analyze(speech, 0.0)
    assert out["speech_prob"] > 0.8 and out["speech_fraction"] > 0.3
    assert "Speech" in out["audio_tags"]
    phone = sound("phone-incoming-call")[:RATE]
    ring = af.analyze(phone, 5.0)
    assert ring["speech_prob"] < 0.5
    assert {"Telephone", "Telephone bell ringing", "Ringtone", "Alarm"} & set(ring["audio_tags"])
    vec = af.vector(ring)
    assert vec.shape == (AUDIO_DIM,) and np.isfinite(vec).all()
    assert af.analyze(None) is None and not af.vector(None).any()
    with pytest.raises(ValueError, match="1-D float"):
        af.analyze(np.zeros((2, 100), np.float32))


def test_registry_embedded_interface_and_missing_modalities():
    enc = get_encoder("embedded")
    assert (enc.audio_dim, enc.visual_dim) == (AUDIO_DIM, VISUAL_DIM) and enc.version.startswith("embedded-v")
    sec = enc.encode_second([], None, None, 0.0, 0)
    assert not sec.audio_available and not sec.visual_available
    assert not sec.audio.any() and not sec.visual.any()
    assert enc.encode_audio(np.zeros(RATE, np.float32)).any()  # silence is present audio, not missing
    with pytest.raises(ValueError, match="unknown encoder"):
        get_encoder("nope")


# ---------------------------------------------------------------------------------------------- hf


@pytest.fixture(scope="module")
def tiny_hf(tmp_path_factory):
    """Tiny random CLIP and CLAP checkpoints saved in HF folders (what a user's weights look like on disk)."""
    import torch
    from transformers import (
        ClapConfig,
        ClapFeatureExtractor,
        ClapModel,
        CLIPConfig,
        CLIPImageProcessor,
        CLIPModel,
    )

    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("hf")
    clip = CLIPModel(CLIPConfig(
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                           image_size=32, patch_size=8),
        text_config=dict(vocab_size=100, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, max_position_embeddings=16, bos_token_id=0, eos_token_id=1,
                         pad_token_id=1),
        projection_dim=24)).eval()
    clip.save_pretrained(root / "clip")
    CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}).save_pretrained(root / "clip")
    clap = ClapModel(ClapConfig(
        audio_config=dict(hidden_size=32, patch_embeds_hidden_size=16, depths=[1, 1], num_attention_heads=[1, 2],
                          spec_size=256, window_size=8, num_mel_bins=64, projection_dim=16),
        text_config=dict(vocab_size=100, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32, projection_dim=16, max_position_embeddings=32),
        projection_dim=16)).eval()
    clap.save_pretrained(root / "clap")
    ClapFeatureExtractor(feature_size=64, truncation="rand_trunc").save_pretrained(root / "clap")
    return root, clip, clap


def test_hf_encoder_loads_offline_and_matches_the_saved_models(tiny_hf, pictures, monkeypatch):
    import torch
    from scipy.signal import resample_poly
    from transformers import ClapFeatureExtractor, CLIPImageProcessor

    root, clip, clap = tiny_hf
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    enc = get_encoder("hf", clip_model=str(root / "clip"), clap_model=str(root / "clap"))
    assert (enc.visual_dim, enc.audio_dim) == (24, 32) and enc.version.startswith("hf-v1")
    frames = [pictures["astronaut"], pictures["camera"]]
    vis = enc.encode_visual(frames)
    px = CLIPImageProcessor.from_pretrained(root / "clip")(images=frames, return_tensors="pt")["pixel_values"]
    with torch.no_grad():
        ref = clip.get_image_features(pixel_values=px)
    ref = getattr(ref, "pooler_output", ref).mean(0).numpy()
    np.testing.assert_allclose(vis, ref, rtol=1e-4, atol=1e-5)  # the saved weights, not a random re-init
    audio = (0.1 * np.random.default_rng(0).standard_normal(RATE)).astype(np.float32)
    aud = enc.encode_audio(audio)
    fe = ClapFeatureExtractor.from_pretrained(root / "clap")
    feats = fe(resample_poly(audio, 3, 1).astype(np.float32), sampling_rate=48_000, return_tensors="pt")
    with torch.no_grad():
        ref_a = clap.audio_model(input_features=feats["input_features"]).pooler_output[0].numpy()
    np.testing.assert_allclose(aud, ref_a, rtol=1e-4, atol=1e-5)
    sec = enc.encode_second(frames, None, None, 3.0, 3)
    assert sec.visual_available and not sec.audio_available and not sec.audio.any()


def test_hf_missing_model_says_where_to_put_weights(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(BadInput, match="put its Hugging Face files"):
        get_encoder("hf", clip_model=str(tmp_path / "no-clip"), clap_model=str(tmp_path / "no-clap"))


def test_hf_refuses_a_checkpoint_of_the_wrong_kind(tiny_hf, monkeypatch):
    root, _, _ = tiny_hf
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(BadInput):
        get_encoder("hf", clip_model=str(root / "clip"), clap_model=str(root / "clip"))


# ------------------------------------------------------------------------------------------- cache


@pytest.fixture(scope="module")
def short_clip(tmp_path_factory):
    from training.media.synth import ClipSpec, place, write_clip

    img = ken_burns(sample_image("camera"), 320, 180, 0.5)
    track = np.zeros(4 * RATE, np.float32)
    place(track, sound("phone-incoming-call")[: 2 * RATE], 1.0)
    path = tmp_path_factory.mktemp("clips") / "phone.mp4"
    write_clip(path, ClipSpec(4.0, 10.0, 320, 180, lambda t: img, track))
    return path


def test_cache_embedded_layout_hash_and_version(short_clip, tmp_path):
    from models.encoders.embedded import EmbeddedEncoder
    from models.encoders.visual import VisualConfig
    from models.trisense.features import ClipFeatures
    from pipelines.sinks.feature_cache import FeatureCache

    enc = EmbeddedEncoder(VisualConfig(pose=False, faces=False))
    cache = FeatureCache(tmp_path)
    feats = cache.get_or_compute(short_clip, enc)
    assert feats.num_seconds == 4 and feats.audio.shape == (4, AUDIO_DIM) and feats.visual.shape == (4, VISUAL_DIM)
    assert feats.audio_mask.all() and feats.visual_mask.all()
    # PreFM's embedded layout and the grounder's npz, both readable by their own loaders.
    assert np.load(tmp_path / "embedded" / "audio" / "phone.npy").shape == (4, AUDIO_DIM)
    assert np.load(tmp_path / "embedded" / "visual" / "phone.npy").shape == (4, VISUAL_DIM)
    np.testing.assert_array_equal(ClipFeatures.load(tmp_path / "embedded" / "phone.npz").visual, feats.visual)
    seconds = cache.detections(enc, "phone")
    assert [s["index"] for s in seconds] == [0, 1, 2, 3]
    assert any({"Telephone", "Telephone bell ringing", "Ringtone"} & set(s["audio_tags"]) for s in seconds[1:3])
    manifest = tmp_path / "manifest" / "embedded" / "phone.json"
    stamp = manifest.stat().st_mtime_ns
    again = cache.get_or_compute(short_clip, enc)
    assert manifest.stat().st_mtime_ns == stamp  # served from disk
    np.testing.assert_array_equal(again.audio, feats.audio)
    other = EmbeddedEncoder(VisualConfig(pose=False, faces=False, yolo_size=320))
    assert other.version != enc.version
    assert cache.lookup(short_clip, other) is None  # another encoder version is not reused
    changed = tmp_path / "phone.mp4"
    changed.write_bytes(short_clip.read_bytes() + b"\0")
    assert cache.lookup(changed, enc, video_id="phone") is None  # other bytes, same id: recomputed
    with pytest.raises(FileNotFoundError):
        cache.get_or_compute(tmp_path / "missing.mp4", enc)


def test_cache_hf_layout_is_prefm_clip_clap(short_clip, tiny_hf, tmp_path, monkeypatch):
    from pipelines.sinks.feature_cache import FeatureCache

    root, _, _ = tiny_hf
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    enc = get_encoder("hf", clip_model=str(root / "clip"), clap_model=str(root / "clap"))
    feats = FeatureCache(tmp_path).get_or_compute(short_clip, enc, video_id="vid1")
    assert np.load(tmp_path / "CLIP" / "vid1.npy").shape == (4, 24)
    assert np.load(tmp_path / "CLAP" / "vid1.npy").shape == (4, 32)
    cached = FeatureCache(tmp_path).lookup(short_clip, enc, video_id="vid1")
    np.testing.assert_array_equal(cached.audio, feats.audio)


def test_audio_stage_with_the_speech_stage_vad_gives_the_vectors_of_its_own_vad(demo_clip):
    """The pipeline runs Silero once per second: the audio stage takes the speech stage's window probabilities.
    Its vectors are those of the audio features' own VAD, whatever the speech stage's threshold. (Tags are off:
    the tagger's part is untouched, and it would only add time.)"""
    from itertools import islice

    from models.encoders.audio_features import AudioFeatureConfig
    from pipelines.media.segmenter import iter_segments
    from pipelines.stages.audio import AudioStage
    from pipelines.stages.config import StageConfig
    from pipelines.stages.speech import SpeechStage

    speech = SpeechStage(StageConfig(asr=False, tags=False, vad_threshold=0.3))
    audio, own = AudioStage(StageConfig(asr=False, tags=False)), AudioFeatures(AudioFeatureConfig(tags=False))
    assert audio.features.vad is None  # the stage loads no VAD of its own
    speaking = 0
    for seg in islice(iter_segments(demo_clip[0], max_side=64), 10):
        shared = audio.process(seg, speech.process(seg))
        alone = own.analyze(seg.audio, seg.start)
        assert np.array_equal(shared["vector"], own.vector(alone)), seg.index
        speaking += alone["speech_prob"] > 0.5
    assert speaking >= 3  # the demo clip speaks from 1 s on: the vector's speech part is exercised


def test_the_encoder_version_names_the_detector_the_motion_gate_and_the_pose():
    """Cached features are keyed by the encoder version: another detector, gate or pose must not reuse them."""
    from dataclasses import replace

    from models.encoders.embedded import EmbeddedEncoder
    from models.encoders.visual_config import VisualConfig

    def version(**changes) -> str:
        return EmbeddedEncoder(replace(VisualConfig(), **changes), audio_enabled=False, visual_enabled=False).version

    versions = {version(), version(detector="yolov3-tiny"), version(detector="nanodet"), version(motion_gate=None),
                version(detector="yolov3-tiny", motion_gate=None), version(pose_model="mediapipe")}
    assert len(versions) == 6 and "|pose-" not in version(pose_model="mediapipe")  # MediaPipe's caches stay valid
    assert "|pose-movenet-multipose" in version()  # the default
    assert "|det-" not in version(detector="yolov3-tiny", motion_gate=None)  # the caches made before either existed
