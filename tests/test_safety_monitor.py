"""Live rules, retrieval alerts, cooldown, replay lead time, the judge and the eval CLI."""

import json

import numpy as np
import pytest

from models.safety import SafetyConfig, SafetyMonitor, SecondSignals
from models.safety.knowledge import load_rules
from models.safety.logparse import Segment, parse_log
from models.safety.monitor import Alert
from models.safety.retrieval import RuleRetriever
from tests.helpers.web import QuietHandler, serve, served_url
from training.safety.cli import KEYS, eval_main
from training.safety.replay import replay

GAS = "Gas water heaters should not be installed in the living room, bathroom, or restroom."
BENIGN = [Segment("07:00 AM", "Kitchen", "A kettle and bread on the counter.", "She makes tea and eats toast."),
          Segment("08:30 AM", "Balcony", "Potted plants.", "She waters the plants with a can."),
          Segment("02:15 PM", "Dining room", "A journal on the table.", "She writes in her journal.")]
RISK = Segment("05:30 PM", "Bathroom", "New gas water heater unit unboxed.",
               "She mounts the gas water heater on the bathroom wall and connects the gas hose.")
LOG = BENIGN + [RISK]


@pytest.fixture(scope="module")
def retriever():
    return RuleRetriever(load_rules(), embedder=None)


def monitor(retriever, **kw):
    return SafetyMonitor(SafetyConfig(use_embeddings=False, **kw), retriever=retriever)


def feed(mon, seconds):
    out = []
    for s in seconds:
        out += mon.update(s)
    return out


def test_alert_schema_is_exact():
    a = Alert(time=3.0, severity="warning", rule="r", reason="why", evidence=["t=1"])
    assert a.to_dict() == {"time": 3.0, "severity": "warning", "rule": "r", "reason": "why",
                           "lead_time_s": 0.0, "evidence": ["t=1"]}


def test_signals_validate():
    with pytest.raises(ValueError):
        SecondSignals(time=-1)
    with pytest.raises(ValueError):
        SecondSignals(time=0, camera_trouble="foggy")
    with pytest.raises(ValueError):
        SecondSignals(time=0, pose=[{"posture": "flying"}])


def test_fall_after_impact_alerts_once_after_staying_down(retriever):
    """Scripted risky sequence: a loud impact at t=5, the person lies down from t=6 and stays."""
    mon = monitor(retriever, segment_s=1000)
    seconds = [SecondSignals(time=float(t), persons=1, pose=[{"posture": "standing"}]) for t in range(5)]
    seconds.append(SecondSignals(time=5.0, persons=1, audio_tags={"Thump, thud": 0.9}, pose=[{"posture": "standing"}]))
    seconds += [SecondSignals(time=float(t), persons=1, pose=[{"posture": "lying"}]) for t in range(6, 30)]
    alerts = feed(mon, seconds)
    assert [a.rule for a in alerts] == ["A person who has fallen must be checked on at once"]
    assert alerts[0].severity == "critical"
    # Lead time against the scripted incident (lying from t=6): the alert comes down_s after the impact.
    assert alerts[0].time == 10.0
    assert 6.0 - alerts[0].time == pytest.approx(-4.0)


def test_lying_without_fall_or_impact_is_not_a_fall(retriever):
    mon = monitor(retriever, segment_s=1000)
    assert feed(mon, [SecondSignals(time=float(t), persons=1, pose=[{"posture": "lying"}]) for t in range(40)]) == []


def test_alarm_with_people_staying_but_not_when_empty(retriever):
    alarm = {"Smoke detector, smoke alarm": 0.9}
    stay = [SecondSignals(time=float(t), persons=2, audio_tags=alarm) for t in range(15)]
    alerts = feed(monitor(retriever, segment_s=1000), stay)
    assert len(alerts) == 1 and alerts[0].time == 10.0 and alerts[0].severity == "critical"
    empty = [SecondSignals(time=float(t), persons=0, audio_tags=alarm) for t in range(15)]
    assert feed(monitor(retriever, segment_s=1000), empty) == []


def test_child_near_knife_help_call_and_covered_camera(retriever):
    mon = monitor(retriever, segment_s=1000)
    child = [SecondSignals(time=float(t), objects={"child": 1, "knife": 1}) for t in range(4)]
    alerts = feed(mon, child)
    assert [a.rule for a in alerts] == ["Keep children away from dangerous objects"] and "knife" in alerts[0].reason
    help_ = feed(mon, [SecondSignals(time=10.0, speech_text="please help me")])
    assert help_ and help_[0].severity == "critical"
    assert feed(mon, [SecondSignals(time=11.0, speech_text="can you pass the salt")]) == []
    covered = feed(mon, [SecondSignals(time=float(t), camera_trouble="covered") for t in range(20, 25)])
    assert len(covered) == 1 and covered[0].time == 23.0
    assert covered[0].reason.startswith("The camera has been covered for 3 s")  # not "Camera camera"
    named = feed(monitor(retriever, segment_s=1000),
                 [SecondSignals(time=float(t), camera="door", camera_trouble="dark") for t in range(5)])
    assert named[0].reason.startswith("Camera door has been dark")


def test_cooldown_suppresses_repeats(retriever):
    mon = monitor(retriever, segment_s=1000, cooldown_s=60)
    s = lambda t, text: SecondSignals(time=t, speech_text=text)  # noqa: E731
    assert len(feed(mon, [s(0.0, "help me"), s(1.0, ""), s(2.0, "help me")])) == 1
    assert len(feed(mon, [s(70.0, ""), s(71.0, "help me")])) == 1


def test_retrieval_names_violated_rule_and_threshold_silences(retriever):
    alerts = replay(monitor(retriever, threshold=0.05), LOG, trigger="Installing the gas water heater in the bathroom").alerts
    assert alerts and alerts[-1].rule == GAS and alerts[-1].tier == "retrieval"
    assert alerts[-1].severity == "critical" and "gas" in alerts[-1].evidence[0].lower()
    assert replay(monitor(retriever, threshold=5.0), LOG).alerts == []


def test_replay_measures_lead_time(retriever):
    res = replay(monitor(retriever, threshold=0.05), LOG, trigger="Installing the gas water heater in the bathroom")
    assert res.risky_index == 3
    gas = [a for a in res.alerts if a.rule == GAS]
    assert gas[0].lead_time_s == 0.0  # warned on the risky segment itself
    assert res.lead_time_s == res.risky_time - res.first_alert_time


def test_live_speech_alone_is_not_evidence_but_corroborated_speech_is(retriever):
    """Words about a gas heater raise nothing; the same words with the heater seen raise the rule."""
    said = "I will install the gas water heater in the bathroom"
    talk = [SecondSignals(time=float(t), persons=1, objects={"oven": 1}, speech_text=said if t == 2 else "")
            for t in range(11)]
    mon = monitor(retriever, threshold=0.05, segment_s=5)
    assert feed(mon, talk) == []
    assert "[Location] camera" in mon.log.text() and said in mon.log.text()  # speech is logged, not trusted
    seen = [SecondSignals(time=float(t), persons=1, objects={"gas water heater": 1},
                          events=[{"label": "installing a heater on the bathroom wall", "modality": "visual"}],
                          speech_text=said if t == 2 else "") for t in range(11)]
    assert any(a.rule == GAS for a in feed(monitor(retriever, threshold=0.05, segment_s=5), seen))


def test_a_posture_counts_only_where_someone_is_seen():
    """Pose said "lying" on a picture where the detector saw nobody: the log must not say a person is lying."""
    from models.safety.obslog import describe

    ghost = describe([SecondSignals(time=float(t), persons=0, pose=[{"posture": "lying"}]) for t in range(5)])
    assert "lying" not in ghost.behavior
    seen = describe([SecondSignals(time=float(t), persons=1, pose=[{"posture": "lying"}]) for t in range(5)])
    assert "A person is lying down on the floor for about 5 seconds." in seen.behavior


def test_live_alerts_take_evidence_only_from_the_seconds_just_closed(retriever):
    """The heater installed in the first segment raises its rule once; the empty segments after it must not
    raise anything from that old evidence, even with the cool-down over."""
    said = "I will install the gas water heater in the bathroom"
    act = [SecondSignals(time=float(t), persons=1, objects={"gas water heater": 1},
                         events=[{"label": "installing a heater on the bathroom wall", "modality": "visual"}],
                         speech_text=said if t == 2 else "") for t in range(5)]
    empty = [SecondSignals(time=float(t), persons=0) for t in range(5, 40)]
    mon = monitor(retriever, threshold=0.05, segment_s=5, cooldown_s=1.0)
    first = feed(mon, act + empty[:1])
    assert [a.rule for a in first] == [GAS]
    assert feed(mon, empty[1:]) == []  # the same log, with the old segment still in its window


def demo_clip_seconds(n: int = 22) -> list[SecondSignals]:
    """What the pipeline reports on the demo clip: speech, then a phone ringing, then an alarm clock."""
    words = "Hello and welcome to Foresight. The phone is ringing in the kitchen. Please check the front door."
    out = []
    for t in range(n):
        tags = {"Speech": 0.9} if t < 8 else {}
        if 9 <= t < 14:
            tags = {"Telephone bell ringing": 0.8, "Telephone": 0.6, "Ringtone": 0.5}
        if 15 <= t < 19:
            tags = {"Alarm clock": 0.7, "Beep, bleep": 0.4}
        out.append(SecondSignals(time=float(t), camera="demo", audio_tags=tags,
                                 speech_text=words if t == 3 else "",
                                 events=[{"label": "Telephone bell ringing", "modality": "audio", "confidence": 0.8}]
                                 if 9 <= t < 14 else []))
    return out


def test_demo_clip_talk_about_a_phone_raises_no_alert(retriever):
    mon = monitor(retriever, threshold=0.05, segment_s=10)
    assert feed(mon, demo_clip_seconds()) + mon.flush(22.0) == []


class _Judge(QuietHandler):
    answer = ""

    def verdict(self, prompt: str) -> str:
        return type(self).answer

    def do_POST(self):  # noqa: N802
        prompt = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["messages"][0]["content"]
        body = json.dumps({"choices": [{"message": {"content": self.verdict(prompt)}}]}).encode()
        self.reply(200, body, **{"Content-Type": "application/json"})


@pytest.fixture
def judge_url():
    with served_url(_Judge, "/v1") as url:
        yield url


def test_judge_confirms_rejects_and_falls_back(retriever, judge_url):
    make = lambda: monitor(retriever, threshold=0.05, judge_url=judge_url, judge_timeout_s=5)  # noqa: E731
    _Judge.answer = '{"risk": false, "rule": null, "reason": "nothing wrong"}'
    assert replay(make(), LOG).alerts == []
    _Judge.answer = 'Sure: {"risk": true, "rule": 1, "reason": "Gas heater in a bathroom risks CO poisoning."}'
    alerts = replay(make(), LOG).alerts
    assert alerts and alerts[-1].tier == "judge" and alerts[-1].reason.startswith("Gas heater in a bathroom")
    _Judge.answer = "I am not sure."
    alerts = replay(make(), LOG).alerts
    assert alerts and alerts[-1].tier == "retrieval"


def test_eval_cli_bad_input(tmp_path, capsys):
    assert eval_main(["--logs", str(tmp_path / "missing.json"), "--no-embeddings"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "missing.json" in err
    bad = tmp_path / "bad.json"
    bad.write_text("[{")
    assert eval_main(["--logs", str(bad), "--no-embeddings"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_eval_cli_json_on_small_file(tmp_path, capsys):
    log = parse_log("\n".join(["[LOG START]"] + [
        f"[Time] {s.time}\n[Location] {s.location}\n[Environmental Observation] {s.environment}\n"
        f"[Behavioral Observation] {s.behavior}" for s in LOG] + ["[LOG END]"]))
    assert len(log) == 4
    rec = {"safety_knowledge": GAS, "condition_or_scenario": "Installing a gas heater",
           "risk_reason": "CO poisoning", "risk_triggering_behavior": "Installing the gas water heater in the bathroom",
           "input": "[LOG START]\n" + "\n".join(f"[Time] {s.time}\n[Location] {s.location}\n[Environmental Observation] "
                                                f"{s.environment}\n[Behavioral Observation] {s.behavior}" for s in LOG)
                    + "\n[LOG END]"}
    path = tmp_path / "logs.json"
    path.write_text(json.dumps([rec, rec]))
    assert eval_main(["--logs", str(path), "--json", "--runs", "3", "--no-embeddings", "--threshold", "0.05"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(KEYS) <= set(out)
    assert out["top1"] == 1.0 and out["runs"] == 3 and out["logs"] == 2
    assert all(0.0 <= out[k] <= 1.0 for k in KEYS)
    assert out["robustness"] <= out["accuracy"] <= out["potential"]


@pytest.fixture(scope="module")
def minilm_monitor_parts():
    from models.sentences import SentenceEncoder
    return RuleRetriever(load_rules(), SentenceEncoder())


@pytest.mark.slow
def test_rule_vectors_are_stored_once_and_read_back_unchanged(minilm_monitor_parts, tmp_path, monkeypatch):
    """The knowledge base's MiniLM vectors are kept on disk: a second process start reads the very same vectors."""
    from models.sentences import SentenceEncoder

    monkeypatch.setenv("FORESIGHT_CACHE", str(tmp_path))
    first = RuleRetriever(load_rules(), SentenceEncoder())
    assert len(list((tmp_path / "arrays").glob("minilm-*.npy"))) == 2
    second = RuleRetriever(load_rules(), SentenceEncoder())
    assert np.array_equal(first.rule_emb_text, second.rule_emb_text)
    assert np.array_equal(first.rule_emb_act, second.rule_emb_act)
    assert np.allclose(first.rule_emb_text, minilm_monitor_parts.rule_emb_text, atol=1e-6)
    line = "A woman pours boiling water from the kettle."
    assert np.array_equal(second.embedder.encode([line]), first.embedder.encode([line]))


@pytest.mark.slow
def test_demo_clip_no_alert_with_embeddings_and_gate(minilm_monitor_parts):
    """The live default (MiniLM + risk gate) on the demo clip: no critical phone-while-driving alert."""
    mon = SafetyMonitor(SafetyConfig(segment_s=10), retriever=minilm_monitor_parts)
    assert mon.gate is not None
    assert feed(mon, demo_clip_seconds()) + mon.flush(22.0) == []


@pytest.mark.slow
def test_risk_gate_prefers_full_log_to_cut_log(minilm_monitor_parts):
    """The gate's probability rises when the risky segment arrives (a log not in the dev set)."""
    from models.safety.risk_gate import RiskGate
    gate = RiskGate.load()
    p = [gate.probability(minilm_monitor_parts.analyse([s.text() for s in LOG[:k]])) for k in (3, 4)]
    assert p[1] > p[0] and p[1] > 0.5


@pytest.mark.slow
def test_embedding_retrieval_on_dev_logs():
    """MiniLM + TF-IDF beats TF-IDF alone on the first 30 development logs."""
    from models.safety.knowledge import load_scenarios, normalise_rule_text, pasbench_dir
    from models.sentences import SentenceEncoder
    if not (pasbench_dir() / "text_logs_dev.json").is_file():
        pytest.skip("PaSBench dev logs absent")
    rules = load_rules()
    scen = load_scenarios()[:30]
    key = {normalise_rule_text(r.knowledge): r.id for r in rules}

    def top1(r):
        return sum(r.rank([s.text() for s in parse_log(x.log)], 1)[0].rule.id == key[normalise_rule_text(x.knowledge)]
                   for x in scen)
    assert top1(RuleRetriever(rules, SentenceEncoder())) > top1(RuleRetriever(rules, None))


def test_shipped_hub_correction_is_reproducible(tmp_path):
    """`fit_gate --background` rebuilds data/background.npz: its TF-IDF part from the dev logs' opening segments."""
    import numpy as np

    from models.safety.knowledge import load_scenarios, pasbench_dir
    from models.safety.retrieval import BACKGROUND_FILE
    from training.safety.fit_gate import fit_background
    if not (pasbench_dir() / "text_logs_dev.json").is_file():
        pytest.skip("PaSBench dev logs absent")
    scenarios = load_scenarios()
    out = tmp_path / "background.npz"
    n = fit_background(RuleRetriever(load_rules(), embedder=None, background=None), scenarios, str(out))
    assert n == sum(min(2, len(parse_log(s.log))) for s in scenarios)
    fresh = RuleRetriever(load_rules(), embedder=None, background=out)
    np.testing.assert_allclose(fresh.bg_tfidf, np.load(BACKGROUND_FILE)["tfidf"], atol=1e-6)
    assert float(fresh.bg_tfidf.max()) > 0.0


class _RuleJudge(_Judge):
    """Names the gas-heater rule when retrieval lists it, else (or when told to) says no risk."""

    risk = True

    def verdict(self, prompt: str) -> str:
        rules = prompt.split("RULES:\n", 1)[1].splitlines()
        number = next((int(line.split(".", 1)[0]) for line in rules if "Gas water heaters" in line), None)
        return json.dumps({"risk": type(self).risk and number is not None, "rule": number, "reason": "judged"})


def test_eval_cli_with_judge_tier(tmp_path, capsys):
    """`--judge-url`: the judge's rule replaces retrieval's top-1, its 'no risk' silences runs and cuts."""
    rec = {"safety_knowledge": GAS, "condition_or_scenario": "Installing a gas heater", "risk_reason": "CO poisoning",
           "risk_triggering_behavior": "Installing the gas water heater in the bathroom",
           "input": "[LOG START]\n" + "\n".join(f"[Time] {s.time}\n[Location] {s.location}\n[Environmental Observation] "
                                                f"{s.environment}\n[Behavioral Observation] {s.behavior}" for s in LOG)
                    + "\n[LOG END]"}
    path = tmp_path / "logs.json"
    path.write_text(json.dumps([rec]))
    server = serve("127.0.0.1", _RuleJudge)
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    argv = ["--logs", str(path), "--json", "--runs", "3", "--no-embeddings", "--threshold", "0.0", "--no-replay",
            "--judge-timeout", "5", "--judge-url", url]
    try:
        _RuleJudge.risk = True
        assert eval_main(argv) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["decision"] == "retrieval_score+judge" and out["judge_calls"] == 5 and out["judge_failures"] == 0
        assert out["top1"] == out["accuracy"] == out["robustness"] == 1.0
        _RuleJudge.risk = False
        assert eval_main(argv) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["accuracy"] == out["false_alarm_rate"] == 0.0 and out["judge_failures"] == 0
    finally:
        server.shutdown()
        server.server_close()  # closed port: calls are refused at once
    assert eval_main(argv[:-1] + ["ftp://nowhere"]) == 2
    assert "judge URL" in capsys.readouterr().err
    dead = eval_main(argv[:-1] + [url])  # server gone: every call fails, retrieval's answer stays
    out = json.loads(capsys.readouterr().out)
    assert dead == 0 and out["judge_failures"] == out["judge_calls"] == 5 and out["top1"] == 1.0
