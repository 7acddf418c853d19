"""Corpus v3 split hygiene: no source recording or photo feeds two splits."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from training.corpus.compose_v3 import assign_sources, compose_clip, split_violations
from training.corpus.real_sources import TUXPAINT_STAMPS, Photo, Recording, all_photos, all_recordings

REPO = Path(__file__).resolve().parents[1]


def _fake(n_per_class: dict[str, int]) -> list[Recording]:
    return [Recording(f"x:{llp}/{i}", "test", f"/nowhere/{llp}{i}.ogg", llp, "event")
            for llp, n in n_per_class.items() for i in range(n)]


def test_every_file_gets_one_split_and_tested_classes_are_trained():
    recs = _fake({"Dog": 4, "Cat": 2, "Banjo": 1}) + _fake({"Speech": 20})
    photos = [Photo(f"p:{i}", "test", "", "Dog" if i < 2 else None) for i in range(6)]
    pools = assign_sources(recs, photos, seed=3)
    assert set(pools.split_of) == {r.key for r in recs} | {p.key for p in photos}
    by_class: dict[str, Counter] = {}
    for r in recs:
        by_class.setdefault(r.llp, Counter())[pools.split_of[r.key]] += 1
    assert by_class["Dog"] == Counter({"train": 2, "val": 1, "test": 1})
    assert by_class["Cat"] == Counter({"train": 1, "test": 1})
    assert by_class["Banjo"] == Counter({"train": 1})  # one file: learnable, never tested
    assert set(by_class["Speech"]) == {"train", "val", "test"}
    for split in ("train", "val", "test"):
        keys = {r.key for r in pools.recordings[split]} | {p.key for p in pools.photos[split]}
        assert all(pools.split_of[k] == split for k in keys)


def test_split_violations_catches_a_shared_file(tmp_path):
    (tmp_path / "truth").mkdir()
    for cid, split, sources in (("a", "train", ["s1", "s2"]), ("b", "test", ["s2", "s3"]), ("c", "test", ["s3"])):
        (tmp_path / "truth" / f"{cid}.json").write_text(json.dumps({"split": split, "sources": sources}))
    assert split_violations(tmp_path) == {"s2": ["test", "train"]}


@pytest.mark.skipif(not TUXPAINT_STAMPS.is_dir(), reason="tuxpaint-stamps-default not installed")
def test_composed_clips_use_only_their_split(tmp_path):
    recs = [r for r in all_recordings(max_voices=20) if r.role != "distractor" or "freedesktop" in r.key]
    pools = assign_sources(recs, all_photos(), seed=0)
    for i, split in enumerate(("train", "val", "test", "test", "train")):
        truth, _, extra = compose_clip(f"c{i}", split, pools, seed=0, index=i)
        sources = json.loads(extra["sources"])
        assert sources and all(pools.split_of[k] == split for k in sources), (split, sources)
        record = {**truth.to_dict(), "sources": sources}
        (tmp_path / "truth").mkdir(exist_ok=True)
        (tmp_path / "truth" / f"c{i}.json").write_text(json.dumps(record))
    assert split_violations(tmp_path) == {}


def test_built_corpus_is_clean():
    root = REPO / "data" / "corpus_v3"
    if not (root / "truth").is_dir():
        pytest.skip("corpus v3 not built (foresight train corpus --version 3 --out data/corpus_v3)")
    assert split_violations(root) == {}


def test_only_the_listed_sources_can_be_read():
    from training.corpus.real_sources import ALLOWED_ROOTS, _check_allowed, all_recordings

    for rec in all_recordings():
        _check_allowed(rec.locator)  # every inventoried recording lies under a listed source
    for root in ALLOWED_ROOTS:  # the game sound sets and the SoundFont too, however their files are addressed
        _check_allowed(str(root / "x.wav"))
        _check_allowed(f"cat:{root / 'x.cat'}:3")
        _check_allowed(f"sf:{root / 'x.sf3'}:0/21")
    for outside in ("/usr/share/sounds/other-theme/bell.wav", "/tmp/clip.wav", "rcc:/tmp/x.rcc:a.ogg",
                    "/usr/share/tuxpaint/stamps/../../sounds/x.ogg", "cat:/tmp/opensfx.cat:0",
                    "sf:/usr/share/sounds/sf3/Other.sf3:0/21", "sf:/usr/share/sounds/sf2/TimGM6mb.sf2:0/21",
                    "/usr/share/sounds/alsa/Front_Center.wav", "/usr/share/tuxtype/sounds/../../lmms/x.ogg",
                    "/usr/share/games/heroes/sfx/../../../asterisk/sounds/en/hello.gsm",
                    "/usr/share/fluidr3mono-gm-soundfont-other/x.sf3"):
        with pytest.raises(ValueError, match="must never be read"):
            _check_allowed(outside)


def test_every_class_with_two_recordings_is_trained_and_tested():
    from training.corpus.coverage_v3 import class_splits, untestable

    recs = _fake({"Helicopter": 2, "Cheering": 4, "Chainsaw": 1, "Accordion": 3})
    splits = class_splits(recs, assign_sources(recs, [], seed=0))
    assert untestable(splits) == [] and splits["Chainsaw"] == Counter({"train": 1})
    assert all(n["train"] >= 1 and n["test"] == 1 for c, n in splits.items() if c != "Chainsaw")
    assert untestable({"Banjo": Counter({"val": 1, "test": 1})}) == ["Banjo"]


def test_take_overlap_finds_a_shared_take():
    from training.corpus.coverage_v3 import take_overlap

    rng = np.random.default_rng(0)
    take = rng.standard_normal(32_000).astype(np.float32)
    longer = np.concatenate([rng.standard_normal(8_000), 0.5 * take, rng.standard_normal(4_000)]).astype(np.float32)
    assert take_overlap(take[4_000:20_000], longer) > 0.99  # a cut of the take, inside another file, at half gain
    assert take_overlap(rng.standard_normal(16_000), longer) < 0.1


def test_inventory_verdicts_are_current_and_split_is_sound():
    """The committed YAMNet verdicts cover today's inventory, and the seed-0 split trains and tests every class
    that has two kept recordings (only where every source package is installed, as on a bootstrapped machine)."""
    from training.corpus.compose_v3 import LABEL_CHECK
    from training.corpus.coverage_v3 import class_splits, untestable
    from training.corpus.label_check import kept_keys
    from training.corpus.real_sources import ALLOWED_ROOTS

    if not all(p.is_dir() for p in ALLOWED_ROOTS):
        pytest.skip("corpus v3 source packages not installed (scripts/bootstrap.sh)")
    rows = json.loads(LABEL_CHECK.read_text())["recordings"]
    recs = all_recordings()
    assert [r["key"] for r in rows] == [r.key for r in recs], "rerun label_check.check_recordings"
    kept = [r for r in recs if r.key in kept_keys(rows)]
    assert untestable(class_splits(kept, assign_sources(kept, [], seed=0))) == []


def test_corpus_v3_keeps_its_split_and_v4_adds_the_second_round():
    """Corpus v3 is built from the first source round only, so its source-level split (committed from the built
    corpus as `docs/results/corpus_v3_sources.json`) and the models trained on it stay valid; v4 adds the rest."""
    from training.corpus.compose_v3 import LABEL_CHECK, _unique_photos
    from training.corpus.extra_sources import extra_recordings
    from training.corpus.label_check import kept_keys
    from training.corpus.real_sources import ALLOWED_ROOTS

    if not all(p.is_dir() for p in ALLOWED_ROOTS):
        pytest.skip("corpus v3 source packages not installed (scripts/bootstrap.sh)")
    keep = kept_keys(json.loads(LABEL_CHECK.read_text())["recordings"])
    second = {r.key for r in extra_recordings()}
    v3 = [r for r in all_recordings(extra=False) if r.key in keep]
    v4 = [r for r in all_recordings() if r.key in keep]
    assert second and not second & {r.key for r in v3} and second & {r.key for r in v4}
    built = json.loads((REPO / "docs" / "results" / "corpus_v3_sources.json").read_text())
    assert assign_sources(v3, _unique_photos(all_photos()), seed=0).split_of == built
    moved = {k for k, s in assign_sources(v4, _unique_photos(all_photos()), seed=0).split_of.items()
             if k in built and built[k] != s}
    assert moved  # growing the per-class groups re-cuts them: v4 is a new corpus, never a v3 rebuild
