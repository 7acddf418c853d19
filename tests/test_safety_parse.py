"""Parser, knowledge base and perturbations of the safety monitor."""

import json

import pytest

from models.safety.knowledge import load_rules, load_scenarios, pasbench_dir
from models.safety.logparse import parse_log, render_log
from training.safety.perturb import perturb_log

VARIANTS = {
    "brackets": "[LOG START]\n[Time] 06:30 AM\n[Location] Bedroom\n[Environmental Observation] Dim light.\n"
                "[Behavioral Observation] She stands up.\n[Time] 05:30 PM\n[Location] Bathroom\n"
                "[Environmental Observation] Tiles.\n[Behavioral Observation] She mounts a gas water heater.\n[LOG END]",
    "markdown": "[LOG START]  \n\n**06:30 AM**  \n**\n[Location]** Bedroom  \n**\n[Environmental Observation]** Dim light.  \n"
                "**\n[Behavioral Observation]** She stands up.  \n\n**05:30 PM**  \n**\n[Location】** Bathroom  \n"
                "**\n[Environmental Observation】** Tiles.  \n**\n[Behavioral Observation】** She mounts a gas water heater.\n[LOG END]",
    "headings": "[LOG START]\n\n**Time**  \n06:30 AM  \n**Location**  \nBedroom  \n**Environmental Observation**  \nDim light.  \n"
                "**Behavioral Observation**  \nShe stands up.  \n\n---  \n\n**Time**  \n05:30 PM  \n**Location**  \nBathroom  \n"
                "**Environmental Observation**  \nTiles.  \n**Behavioral Observation**  \nShe mounts a gas water heater.\n[LOG END]",
    "colons": "[LOG START]\n**Entry 1**\n[06:30 AM]\n**Location**: Bedroom\n**Environmental Observation**: Dim light.\n"
              "**Behavioral Observation**: She stands up.\n[05:30 PM]\n**Location**: Bathroom\n"
              "**Environmental Observation**: Tiles.\n**Behavioral Observation**: She mounts a gas water heater.\n[LOG END]",
    "dash": "[LOG START]\n\n06:30 AM - Bedroom\nEnvironmental Observation: Dim light.\nBehavioral Observation: She stands up.\n\n"
            "05:30 PM - Bathroom\nEnvironmental Observation: Tiles.\nBehavioral Observation: She mounts a gas water heater.\n[LOG END]",
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_parser_reads_every_markup_variant(name):
    segs = parse_log(VARIANTS[name])
    assert [s.time for s in segs] == ["06:30 AM", "05:30 PM"]
    assert [s.location for s in segs] == ["Bedroom", "Bathroom"]
    assert segs[1].environment == "Tiles."
    assert segs[1].behavior == "She mounts a gas water heater."
    assert segs[1].seconds() == 17.5 * 3600


def test_parser_prose_segments_without_tags():
    text = "[LOG START]\n\n**06:30 AM - Bedroom**\nShe folds the duvet.\n\n**07:15 AM - Street**\nShe walks north.\n[LOG END]"
    segs = parse_log(text)
    assert [(s.time, s.location, s.behavior) for s in segs] == [
        ("06:30 AM", "Bedroom", "She folds the duvet."), ("07:15 AM", "Street", "She walks north.")]


def test_parser_rejects_empty_and_non_text():
    with pytest.raises(ValueError):
        parse_log("[LOG START]\n[LOG END]")
    with pytest.raises(ValueError):
        parse_log(None)


def test_render_round_trip():
    segs = parse_log(VARIANTS["markdown"])
    assert parse_log(render_log(segs)) == segs


def test_knowledge_base_ships_288_rules():
    rules = load_rules()
    assert len(rules) == 288
    assert {r.severity for r in rules} == {"critical", "warning", "info"}
    assert sum(bool(r.trigger) for r in rules) == 128
    assert [r.id for r in rules] == list(range(288))


def test_pasbench_dir_env_override(monkeypatch, tmp_path):
    monkeypatch.setenv("FORESIGHT_PASBENCH_DIR", str(tmp_path))
    assert pasbench_dir() == tmp_path
    assert pasbench_dir("/x") .as_posix() == "/x"
    with pytest.raises(FileNotFoundError):
        load_scenarios()


def test_load_scenarios_rejects_malformed(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError):
        load_scenarios(bad)
    bad.write_text(json.dumps([{"input": 3}]))
    with pytest.raises(ValueError):
        load_scenarios(bad)


@pytest.mark.skipif(not (pasbench_dir() / "text_logs_dev.json").is_file(), reason="PaSBench dev logs absent")
def test_every_dev_log_parses_with_time_and_behaviour():
    for sc in load_scenarios():
        segs = parse_log(sc.log)
        assert len(segs) >= 2
        assert all(s.behavior and s.seconds() is not None for s in segs)


def test_perturbation_is_seeded_and_keeps_last_segment():
    segs = parse_log(VARIANTS["brackets"]) * 4
    a, b = perturb_log(segs, 3), perturb_log(segs, 3)
    assert a == b
    assert any(perturb_log(segs, s) != a for s in range(4, 10))
    for seed in range(10):
        out = perturb_log(segs, seed)
        assert out[-1].location == "Bathroom" and out[-1].behavior
        assert len(out) <= len(segs)


def test_perturbation_keeps_the_evidence_sentence_and_nothing_else_changes():
    from models.safety.logparse import Segment
    last = Segment("09:00 AM", "Garage", "A car.", "He opens the door. He starts the engine. He leaves the engine running in the garage. "
                   "He waits. He reads the paper.")
    segs = [Segment("08:00 AM", "Kitchen", "Bread.", "He eats toast."), last]
    keep = "He leaves the engine running in the garage."
    dropped_somewhere = False
    for seed in range(60):
        free, kept = perturb_log(segs, seed), perturb_log(segs, seed, keep=keep)
        assert "engine running" in kept[-1].behavior
        dropped_somewhere |= "engine running" not in free[-1].behavior
        assert len(free) == len(kept) and free[0] == kept[0]
    assert dropped_somewhere  # without `keep` the evidence can be lost


def test_live_segment_text_without_speech():
    from models.safety.obslog import describe
    from models.safety.signals import SecondSignals
    seg = describe([SecondSignals(time=0.0, persons=1, objects={"knife": 1}, speech_text="pass me the knife")])
    assert "pass me the knife" in seg.text() and "pass me the knife" not in seg.text(with_speech=False)
    assert "knife" in seg.text(with_speech=False) and "1 person is present" in seg.text(with_speech=False)
