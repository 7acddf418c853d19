"""SQLite index of per-second features: storage round trip, coarse-to-fine search, persistence."""

import sqlite3

import numpy as np
import pytest
import torch

from models.sentences import shared_encoder
from models.trisense.features import ClipFeatures
from models.trisense.grounder import Grounder
from models.trisense.modeling_trisense import TriSenseConfig, TriSenseModel
from pipelines.sinks.grounding_index import GroundingIndex

torch.set_num_threads(1)
QUERY = "a red car drives past the camera"


def make_grounder(seed=0) -> Grounder:
    """A tiny model whose coarse head is set by hand: the query maps onto a known visual direction."""
    torch.manual_seed(seed)
    cfg = TriSenseConfig(visual_dim=16, audio_dim=8, speech_dim=384, d_model=32, n_heads=2, n_layers=1,
                         ff_dim=64, coarse_dim=16, max_window_s=64)
    model = TriSenseModel(cfg).eval()
    enc = shared_encoder()
    qv = torch.from_numpy(enc.encode(QUERY))
    with torch.no_grad():
        model.coarse.seconds["visual"].weight.copy_(torch.eye(16))
        model.coarse.seconds["visual"].bias.zero_()
        w = torch.zeros(3 * 16, 384)
        proto = torch.zeros(16)
        proto[3] = 1.0
        w[:16] = torch.outer(proto, qv)  # visual block: query -> e_3; audio/speech blocks stay random-free
        model.coarse.query.weight.copy_(w)
        model.coarse.query.bias.zero_()
    return Grounder(model, text_encoder=enc)


def make_clip(rng, T, planted=None, audio=True):
    visual = rng.standard_normal((T, 16)).astype(np.float32)
    visual[:, 3] = -abs(visual[:, 3])
    if planted:
        visual[planted[0] : planted[1], 3] = 6.0
    return ClipFeatures(visual=visual, audio=rng.standard_normal((T, 8)).astype(np.float32) if audio else None,
                        transcript=[{"start": 10.0, "end": 12.0, "text": "hello there"}],
                        events=[{"label": "car", "modality": "visual", "start": 1.0, "end": 3.0}])


@pytest.fixture(scope="module")
def grounder():
    return make_grounder()


def test_add_and_load_roundtrip(tmp_path, grounder):
    rng = np.random.default_rng(0)
    index = GroundingIndex(tmp_path / "g.db", grounder)
    clip = make_clip(rng, 50, audio=False)
    index.add("cam1", clip)
    assert index.source_ids() == ["cam1"] and len(index) == 50
    back = index.load("cam1")
    assert np.array_equal(back.visual, clip.visual) and back.audio is None
    part = index.load("cam1", 8, 20)
    assert np.array_equal(part.visual, clip.visual[8:20])
    assert part.transcript == [{"start": 2.0, "end": 4.0, "text": "hello there"}]
    index.add("cam1", make_clip(rng, 30))  # replacing a source keeps one copy
    assert len(index) == 30
    index.remove("cam1")
    assert index.source_ids() == [] and index.search(QUERY) == []


def test_coarse_to_fine_finds_planted_moment_in_archive(tmp_path, grounder):
    rng = np.random.default_rng(1)
    index = GroundingIndex(tmp_path / "g.db", grounder, window_s=8, stride_s=4, candidates=2, context_s=8)
    for k in range(6):
        index.add(f"clip{k}", make_clip(rng, 300, planted=(200, 208) if k == 4 else None))
    hits = index.search(QUERY, top_k=3)
    assert 1 <= len(hits) <= 3
    assert hits[0].source_id == "clip4"
    assert all(h.source_id == "clip4" for h in hits)  # both candidates fall in the planted region
    assert all(184 <= h.moment.start < h.moment.end <= 224 for h in hits)
    d = hits[0].to_dict()
    assert set(d) == {"source_id", "query", "start", "end", "score", "modality_weights"}
    # restricted to other sources, the search never leaves them
    only = index.search(QUERY, top_k=5, source_ids=["clip0", "clip2"])
    assert only and {h.source_id for h in only} <= {"clip0", "clip2"}
    with pytest.raises(ValueError):
        index.search(QUERY, source_ids=["nope"])
    with pytest.raises(ValueError):
        index.search(QUERY, top_k=0)


def test_persistence_and_reindex_on_model_change(tmp_path, grounder):
    rng = np.random.default_rng(2)
    path = tmp_path / "g.db"
    index = GroundingIndex(path, grounder)
    index.add("a", make_clip(rng, 40))
    n_windows = len(index.store.grounding_windows())
    index.close()
    reopened = GroundingIndex(path, grounder)
    assert reopened.source_ids() == ["a"] and reopened.search(QUERY, top_k=1)
    reopened.close()
    other = make_grounder(seed=1)
    with torch.no_grad():
        other.model.coarse.seconds["visual"].weight.mul_(-1.0)
    rebuilt = GroundingIndex(path, other)
    vec_rows = len(rebuilt.store.grounding_windows())
    assert vec_rows == n_windows
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM grounding_meta WHERE key='model'").fetchone()[0] != ""


def test_bad_input(tmp_path, grounder, monkeypatch):
    monkeypatch.chdir(tmp_path)
    index = GroundingIndex(":memory:", grounder)
    assert list(tmp_path.iterdir()) == []  # an in-memory index writes no file named ":memory:"
    with pytest.raises(ValueError):
        index.add("x", ClipFeatures(visual=np.zeros((5, 7), np.float32)))
    with pytest.raises(ValueError):
        index.add("", make_clip(np.random.default_rng(0), 5))
    with pytest.raises(ValueError):
        index.load("missing")
    with pytest.raises(FileNotFoundError):
        GroundingIndex(tmp_path / "no" / "dir" / "g.db", grounder)
