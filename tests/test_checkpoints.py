"""models/checkpoints.py: the one reader and writer of the project's torch checkpoints."""

from __future__ import annotations

import pytest
import torch

from models import checkpoints


def test_round_trip_and_clear_refusals(tmp_path):
    path = checkpoints.write({"format": "x-v1", "state_dict": {"w": torch.ones(2)}}, tmp_path / "sub" / "m.pt")
    blob = checkpoints.read(path, "x-v1")
    assert torch.equal(blob["state_dict"]["w"], torch.ones(2))
    assert [p.name for p in path.parent.iterdir()] == ["m.pt"]  # no temporary file left
    with pytest.raises(ValueError, match="not a y-v1 checkpoint"):
        checkpoints.read(path, "y-v1")
    with pytest.raises(FileNotFoundError, match="no grounder checkpoint at"):
        checkpoints.read(tmp_path / "missing.pt", what="grounder checkpoint")
    (tmp_path / "junk.pt").write_text("not a checkpoint")
    with pytest.raises(ValueError, match="not a readable torch checkpoint"):
        checkpoints.read(tmp_path / "junk.pt")
    torch.save([1, 2], tmp_path / "list.pt")
    with pytest.raises(ValueError, match="not a dict"):
        checkpoints.read(tmp_path / "list.pt")


def test_an_interrupted_save_keeps_the_old_checkpoint(tmp_path, monkeypatch):
    path = checkpoints.write({"format": "x-v1", "n": 1}, tmp_path / "m.pt")

    def torn(obj, f, *a, **k):  # writes part of the file, then the process is "killed"
        open(f, "wb").write(b"PK\x03\x04 half")
        raise KeyboardInterrupt

    monkeypatch.setattr(torch, "save", torn)
    with pytest.raises(KeyboardInterrupt):
        checkpoints.write({"format": "x-v1", "n": 2}, path)
    monkeypatch.undo()
    assert checkpoints.read(path)["n"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["m.pt"]
