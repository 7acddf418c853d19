"""`train_main` / `eval_main`: bad input exits 2 with one line; a tiny end-to-end train + eval run."""

import json

import pytest

from training.trisense.cli import eval_main, train_main
from training.trisense.evaluate import SETTINGS
from training.trisense.synthetic import generate


def test_bad_paths_exit_2_with_one_line(tmp_path, capsys):
    assert train_main(["--data", str(tmp_path / "x.jsonl"), "--features", str(tmp_path), "--out",
                       str(tmp_path / "m.pt")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "\n" not in err
    assert train_main(["--out", str(tmp_path / "m.pt")]) == 2
    assert eval_main(["--checkpoint", str(tmp_path / "missing.pt"), "--synthetic", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("error:") for line in err)


@pytest.mark.slow
def test_synthetic_train_and_eval_end_to_end(tmp_path, capsys):
    corpus = tmp_path / "syn"
    meta = generate(corpus, n_train=6, n_test=3, seed=3, progress=False)
    assert meta["counts"]["train"]["queries"] > 6
    test_lines = [json.loads(x) for x in (corpus / "test.jsonl").read_text().splitlines()]
    train_lines = [json.loads(x) for x in (corpus / "train.jsonl").read_text().splitlines()]
    assert {r["modality"] for r in train_lines} <= {"visual", "audio", "speech"}
    assert not {r["query"] for r in test_lines} & {r["query"] for r in train_lines}  # held-out wordings
    assert not {r["vid"] for r in test_lines} & {r["vid"] for r in train_lines}
    ckpt = tmp_path / "g.pt"
    rc = train_main(["--synthetic", str(corpus), "--out", str(ckpt), "--epochs", "1", "--d-model", "32",
                     "--layers", "1", "--with-equal-baseline", "--no-progress"])
    assert rc == 0 and ckpt.is_file() and (tmp_path / "g.equal.pt").is_file()
    capsys.readouterr()
    assert eval_main(["--synthetic", str(corpus), "--checkpoint", str(ckpt), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert set(payload["results"]) == {"trisense", "text-match", "equal-weights"}
    for per_setting in payload["results"].values():
        assert set(per_setting) == set(SETTINGS)
        for scores in per_setting.values():
            assert scores["all"]["n"] == len(test_lines)
            assert 0 <= scores["all"]["mIoU"] <= 100
    # the text baseline has nothing to match in visual-only clips without visual labels: never better
    text = payload["results"]["text-match"]
    assert text["visual"]["all"]["mIoU"] <= text["visual+audio+speech"]["all"]["mIoU"]
    assert eval_main(["--synthetic", str(corpus), "--checkpoint", str(ckpt)]) == 0
    table = capsys.readouterr().out
    assert "| trisense | visual+audio+speech |" in table and "| equal-weights | visual |" in table
