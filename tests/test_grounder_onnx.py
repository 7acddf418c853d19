"""The shipped grounder through ONNX Runtime gives the torch model's outputs and search results, and a search over an
existing index needs no torch once the export exists."""

import os
import subprocess
import sys

import numpy as np
import pytest

from models.trisense import SHIPPED_CHECKPOINT
from models.trisense.features import MODALITIES, ClipFeatures, batch_arrays
from models.trisense.grounder import Grounder
from models.trisense.runtime import OnnxBackend, TorchBackend, exported_files
from pipelines.sinks.grounding_index import GroundingIndex

QUERIES = ["a dog is barking", "someone talks about the weather", "a car horn", "people applaud"]


def make_clip(rng, dims, T, audio=True, speech=True) -> ClipFeatures:
    """Real-shaped seconds: the checkpoint's widths, gaps in the masks, words and tagger labels for the evidence."""
    kwargs = {"visual": rng.standard_normal((T, dims["visual"])).astype(np.float32),
              "visual_mask": rng.random(T) > 0.1}
    if audio:
        kwargs.update(audio=rng.standard_normal((T, dims["audio"])).astype(np.float32), audio_mask=rng.random(T) > 0.2)
    if speech:
        vecs = rng.standard_normal((T, dims["speech"])).astype(np.float32)
        kwargs.update(speech=vecs / np.linalg.norm(vecs, axis=1, keepdims=True), speech_mask=rng.random(T) > 0.5)
    labels = [{"label": name, "modality": mod, "start": float(t), "end": t + 1.0, "confidence": 0.7}
              for t in range(0, T, 3) for name, mod in (("Dog", "audio"), ("car", "visual"), ("Applause", "audio"))
              if rng.random() < 0.4]
    transcript = [{"start": 1.0, "end": 4.0, "text": "the weather is lovely today"}] if speech else []
    return ClipFeatures(**kwargs, transcript=transcript, labels=labels, events=labels[:2])


@pytest.fixture(scope="module")
def grounders():
    onnx = Grounder.from_pretrained()
    os.environ["FORESIGHT_GROUNDER"] = "torch"
    try:
        torch_grounder = Grounder.from_pretrained(text_encoder=onnx.text_encoder)
    finally:
        del os.environ["FORESIGHT_GROUNDER"]
    return onnx, torch_grounder


def test_onnx_outputs_match_torch(grounders):
    onnx, torch_grounder = grounders
    assert isinstance(onnx.backend, OnnxBackend) and isinstance(torch_grounder.backend, TorchBackend)
    assert all(path.is_file() for path in exported_files(SHIPPED_CHECKPOINT).values())
    assert onnx.config == torch_grounder.config and onnx.meta == torch_grounder.meta
    assert onnx.backend.fingerprint() == torch_grounder.backend.fingerprint()
    rng = np.random.default_rng(0)
    batches = [[make_clip(rng, onnx.dims, 40), make_clip(rng, onnx.dims, 25, audio=False)],  # padded, audio missing
               [make_clip(rng, onnx.dims, 128, speech=False)], [make_clip(rng, onnx.dims, 1)]]
    worst = 0.0
    for clips in batches:
        feats, masks, valid = batch_arrays(clips, onnx.dims)
        qv = onnx.embed_query(QUERIES[0])
        query = np.broadcast_to(qv, (len(clips), qv.shape[0]))
        evidence = onnx.evidence_arrays(qv, clips, valid.shape[1])
        assert evidence is not None and evidence.any()
        ours = onnx.backend.outputs(feats, masks, valid, query, evidence)
        theirs = torch_grounder.backend.outputs(feats, masks, valid, query, evidence)
        for name, value in theirs.items():
            assert ours[name].shape == value.shape
            worst = max(worst, float(np.abs(ours[name] - value).max()))
        worst = max(worst, float(np.abs(onnx.backend.coarse_seconds(feats) - torch_grounder.backend.coarse_seconds(feats)).max()))
        worst = max(worst, float(np.abs(onnx.backend.coarse_query(query) - torch_grounder.backend.coarse_query(query)).max()))
    assert worst <= 1e-5, worst
    # the spans decoded in numpy are torch's
    clip = batches[0][1]
    for query in QUERIES[:2]:
        a = onnx.answer(query, clip, top_k=5, abstain=False)
        b = torch_grounder.answer(query, clip, top_k=5, abstain=False)
        assert [(m.start, m.end) for m in a.moments] == [(m.start, m.end) for m in b.moments]
        assert np.allclose([m.score for m in a.moments], [m.score for m in b.moments], atol=1e-5, rtol=0)


def test_search_results_match_torch(grounders, tmp_path):
    rng = np.random.default_rng(1)
    onnx, torch_grounder = grounders
    clips = {"cam-a": make_clip(rng, onnx.dims, 90), "cam-b": make_clip(rng, onnx.dims, 60, audio=False),
             "mic-c": make_clip(rng, onnx.dims, 30, speech=False)}
    results = []
    for name, grounder in (("onnx", onnx), ("torch", torch_grounder)):
        index = GroundingIndex(tmp_path / f"{name}.db", grounder, candidates=4)
        for sid, clip in clips.items():
            index.add(sid, clip)
        vecs, present, sids, spans = index._windows_matrix()
        results.append(([index.search(q, top_k=5) for q in QUERIES], vecs.copy(), sids))
        index.close()
    (ours, our_vecs, our_sids), (theirs, their_vecs, their_sids) = results
    assert our_sids == their_sids and np.abs(our_vecs - their_vecs).max() <= 1e-5
    for a, b in zip(ours, theirs, strict=True):
        assert a and [(h.source_id, h.moment.start, h.moment.end) for h in a] == \
            [(h.source_id, h.moment.start, h.moment.end) for h in b]
        assert np.abs(np.array([h.moment.score for h in a]) - [h.moment.score for h in b]).max() <= 1e-5
        for ha, hb in zip(a, b, strict=True):
            for m in MODALITIES:
                assert abs(ha.moment.modality_weights[m] - hb.moment.modality_weights[m]) <= 1e-5


def test_search_over_an_existing_index_needs_no_torch(grounders, tmp_path):
    onnx, _ = grounders
    db = tmp_path / "archive.db"
    index = GroundingIndex(db, onnx)
    index.add("cam-a", make_clip(np.random.default_rng(2), onnx.dims, 50))
    index.close()
    code = ("import sys; from models.trisense.grounder import Grounder; "
            "from pipelines.sinks.grounding_index import GroundingIndex; "
            f"index = GroundingIndex({str(db)!r}, Grounder.from_pretrained()); hits = index.search('a dog is barking'); "
            "print(type(index.grounder.backend).__name__, len(hits) > 0, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["OnnxBackend", "True", "False"], out.stdout + out.stderr
