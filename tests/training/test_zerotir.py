"""ZeroTIR: the isolated executor against hostile programs, the program language, GRPO's direction, and
the agent answering questions over a real Foresight result and over the SQLite store."""

from __future__ import annotations

import json
import os
import random
import signal
import time
from pathlib import Path

import pytest
import torch

from training.methods.zerotir import hostile
from training.methods.zerotir.agent import StreamAgent, main
from training.methods.zerotir.executor import Executor, Limits
from training.methods.zerotir.grpo import CachedRunner, Config, evaluate, grpo_loss, restore, train
from training.methods.zerotir.programs import AGGS, FILTERS, render
from training.methods.zerotir.programs import evaluate as evaluate_program
from training.methods.zerotir.rollout import Trajectory
from training.methods.zerotir.streamlog import from_result, from_store, load
from training.methods.zerotir.tasks import KINDS, is_correct, link, make_episodes, make_log, reference_answer

FIXTURE = Path(__file__).parent / "fixtures" / "zerotir_demo.json"
CORRECT = {"count": ("label", "count"), "first_start": ("label", "first_start"), "last_end": ("label", "last_end"),
           "total": ("label", "total"), "said_after": ("after", "first_text"),
           "said_before": ("before", "last_text"), "said_count": ("mention", "count")}


@pytest.fixture(scope="module")
def executor():
    with Executor(limits=Limits(timeout_s=1.0, memory_mb=128)) as ex:
        yield ex


def test_hostile_programs_get_clean_errors_and_the_executor_survives(executor):
    rows = hostile.run_suite(executor, hostile.GUARDED)
    assert [r["program"] for r in rows if not r["clean"]] == []
    assert all(r["survived"] for r in rows)
    assert all(r["strays"] <= 0 for r in rows)
    assert not Path("/tmp/zerotir-escape.txt").exists()


def test_kernel_layers_hold_without_the_audit_hook():
    with Executor(limits=Limits(timeout_s=0.5), guard=False) as bare:
        if not bare.info["namespaces"]:
            pytest.skip("no network/PID namespaces here (needs root and unshare)")
        assert bare.info["interfaces"] == ["lo"] and bare.info["uid"] != 0
        rows = hostile.run_suite(bare, hostile.KERNEL_ONLY)
    assert all(r["clean"] and r["survived"] and r["strays"] <= 0 for r in rows), rows


def test_without_namespaces_the_audit_hook_and_deadlines_still_hold():
    with Executor(limits=Limits(timeout_s=0.5), isolate=False) as plain:
        assert not plain.info["namespaces"]
        rows = hostile.run_suite(plain, tuple(c for c in hostile.GUARDED if c.name in ("fork bomb", "infinite loop",
                                                                                      "socket to 127.0.0.1")))
    assert all(r["clean"] and r["survived"] for r in rows), rows


def test_a_crashed_or_hung_worker_is_restarted(executor):
    assert hostile.kill_worker(executor)["survived"]
    with Executor(limits=Limits(timeout_s=0.3, grace_s=0.5)) as ex:
        os.killpg(ex.pgid, signal.SIGSTOP)
        started = time.monotonic()
        hung = ex.run("print(1)")
        assert not hung.ok and "restarted" in hung.error and time.monotonic() - started < 5
        assert ex.run("print(2)").stdout == "2\n" and ex.restarts == 1


def test_programs_run_in_the_sandbox_as_they_do_in_process(executor):
    rng = random.Random(3)
    logs = [make_log(rng, f"t{i}") for i in range(3)]
    cases = [(log, rng.choice(log.labels), "door", f, a) for log in logs for f in FILTERS for a in AGGS]
    results = executor.run_many([(render(f, a), {**log.inputs(), "LABEL": lab, "WORD": w})
                                 for log, lab, w, f, a in cases])
    for (log, lab, w, f, a), res in zip(cases, results, strict=True):
        try:
            expected = evaluate_program(f, a, log.events, log.transcript, lab, w)
        except (KeyError, ValueError) as exc:
            assert not res.ok and res.error.startswith(type(exc).__name__), (f, a, res)
        else:
            assert res.ok and res.stdout.strip() == expected, (f, a, res)


def test_each_kind_has_one_correct_program_and_links_resolve():
    episodes = make_episodes(140, 5)
    assert {e.kind for e in episodes} == set(KINDS)
    for e in episodes:
        linked = link(e.question, e.log.labels)
        assert linked.label == e.label or e.kind == "said_count"
        assert linked.word == e.word or e.kind != "said_count"
        f, a = CORRECT[e.kind]
        assert is_correct(evaluate_program(f, a, e.log.events, e.log.transcript, linked.label, linked.word), e.answer)
    assert is_correct("12", "12.0") and is_correct("Hello, there!", "hello there") and not is_correct("3", "4")


def test_grpo_groups_with_equal_rewards_teach_nothing():
    logp = torch.zeros(4, requires_grad=True)
    trajs = [Trajectory(logprob=logp[i], entropy=torch.tensor(0.0)) for i in range(4)]
    grpo_loss(trajs, torch.tensor([1.0, 1.0, 0.0, 0.0]), group=2).backward()
    assert torch.count_nonzero(logp.grad) == 0
    logp.grad = None
    grpo_loss(trajs, torch.tensor([1.0, 0.0, 0.0, 0.0]), group=2).backward()
    assert logp.grad[0] < 0 < logp.grad[1]  # descent raises the rewarded response's log-probability


def test_rl_from_outcome_reward_raises_accuracy_and_code_use(executor):
    torch.set_num_threads(1)
    config = Config(steps=12, batch=8, checkpoints=(12,))
    runner = CachedRunner(executor)
    policy, checkpoints = train(make_episodes(64, 11), runner, config, seed=0)
    test = make_episodes(48, 12)
    before = evaluate(restore(checkpoints[0]["state_dict"], config), test, runner, config, samples=2)
    after = evaluate(policy, test, runner, config, samples=2)
    assert before["code_use"] < 0.3 and after["code_use"] > 0.8
    assert after["accuracy"] > before["accuracy"] + 0.25
    assert runner.executed > 50  # the programs really ran in the sandbox


@pytest.fixture(scope="module")
def agent(executor):
    with StreamAgent(executor=executor) as a:
        yield a


@pytest.mark.parametrize("question,answer", [
    ("how many times did the phone ring?", "1"),
    ("when was the first alarm?", "12.0"),
    ("what was said after the alarm?", "nothing"),
    ("what was said before the phone rang?", "Hello and welcome to Forest Site. The phone is ringing in the "
                                             "kitchen. Please remember to check the front door before you leave."),
    ("how long did the alarm last in total?", "7.0"),
])
def test_agent_answers_questions_about_a_real_result(agent, question, answer):
    ans = agent.ask(load(FIXTURE), question)
    assert ans.answer == answer, ans.turns
    assert ans.calls >= 1 and any(t.startswith("```python") for t in ans.turns)


def test_agent_reads_the_sqlite_store(tmp_path, agent, capsys):
    from pipelines.sinks.store import Store

    result = json.loads(FIXTURE.read_text())
    store = Store(tmp_path / "foresight.db")
    job = store.create_job("analyze", "demo.mp4")
    store.save_result(job, result)
    store.close()
    log = from_store(tmp_path / "foresight.db", job)
    assert log == from_result(result)
    assert agent.ask(log, "when did the last alarm end?").answer == "19.0"
    assert reference_answer("last_end", log, "Fire_alarm", "") == "19.0"
    db = str(tmp_path / "foresight.db")
    assert main([db, "when did the last alarm end?", "--job", job, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["answer"] == "19.0"
    assert main([db, "when did the last alarm end?"]) == 2  # a store needs --job


def test_cli_answers_as_json_and_refuses_bad_input(capsys, tmp_path):
    assert main([str(FIXTURE), "how many times did the phone ring?", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out[0]["answer"] == "1" and out[0]["label"] == "Telephone_bell_ringing"
    assert main([str(tmp_path / "missing.json"), "when?"]) == 2
    assert main([str(tmp_path / "x.db"), "when?"]) == 2
    (tmp_path / "bad.json").write_text("{not json")
    assert main([str(tmp_path / "bad.json"), "when?"]) == 2
