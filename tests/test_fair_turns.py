"""Fair turns on a shared stage host (pipelines/spine/fair.py), with real threads as a threaded actor has."""

from __future__ import annotations

import threading
import time

from pipelines.spine.fair import FairTurns


class Host:
    """Calls made from threads, the order they ran in, and a gate that holds the host busy meanwhile."""

    def __init__(self, turns: FairTurns):
        self.turns = turns
        self.ran: list[str] = []
        self.threads: list[threading.Thread] = []
        self.gate = threading.Event()
        self.call("gate", None, self.gate.wait)
        self._until(lambda: turns._running)

    def call(self, stream: str, seq: int | None, work=lambda: None) -> None:
        def fn():
            work()
            self.ran.append(f"{stream}{'' if seq is None else seq}")

        before = sum(len(w) for w in self.turns._waiting.values())
        thread = threading.Thread(target=self.turns.run, args=(stream, seq, fn))
        thread.start()
        self.threads.append(thread)
        if stream != "gate":  # wait until it is queued, so the arrival order is the order of these calls
            self._until(lambda: sum(len(w) for w in self.turns._waiting.values()) > before)

    @staticmethod
    def _until(cond) -> None:
        while not cond():
            time.sleep(0.001)

    def release(self) -> list[str]:
        self.gate.set()
        for t in self.threads:
            t.join(30)
        assert not any(t.is_alive() for t in self.threads)
        return [r for r in self.ran if r != "gate"]


def test_a_stream_with_a_backlog_does_not_go_ahead_of_a_light_one():
    host = Host(FairTurns())
    heavy = lambda: time.sleep(0.05)  # noqa: E731  (a costly second: 50 ms of host time)
    for seq in range(4):
        host.call("a", seq, heavy)
    host.call("b", 0)
    # A plain queue would run a0 a1 a2 a3 b0: the light stream would wait for the whole backlog.
    assert host.release() == ["a0", "b0", "a1", "a2", "a3"]


def test_each_streams_calls_run_in_its_order_whatever_order_they_arrive_in():
    turns = FairTurns()
    turns.run("a", 0, lambda: None)
    host = Host(turns)
    host.call("a", 3)
    host.call("a", 1)
    host.call("b", 0)
    host.call("a", 2)
    assert host.release() == ["b0", "a1", "a2", "a3"]  # b has had no time yet, a has (a0)


def test_a_new_streams_first_call_waits_for_seq_0():
    turns = FairTurns()
    turns.start("a")
    host = Host(turns)
    host.call("a", 1)  # its arguments were ready first
    host.call("a", 0)
    assert host.release() == ["a0", "a1"]


def test_a_call_that_never_comes_is_given_up():
    turns = FairTurns(gap_s=0.2)
    turns.run("a", 0, lambda: None)
    host = Host(turns)
    host.call("a", 2)  # a1 was lost upstream: a2 runs once the gap has passed
    assert host.release() == ["a2"]


def test_a_stream_that_was_away_starts_from_the_current_virtual_time():
    turns = FairTurns()
    for seq in range(3):
        turns.run("b", seq, lambda: time.sleep(0.05))
    turns.run("c", 0, lambda: None)
    assert turns._busy["c"] >= 0.1  # not ~0: no credit for the time before it came, or it would starve b


def test_ready_calls_of_other_streams_share_one_batch_and_still_run_in_their_turns():
    seen: list[list[str]] = []
    turns = FairTurns(gap_s=0.5, prefetch=lambda inputs: seen.append(list(inputs)))
    turns.run("c", 0, lambda: None)
    host = Host(turns)
    for stream, seq in (("a", 0), ("b", 0), ("c", 2)):  # c's next is 1: c2 is not ready and joins no batch
        thread = threading.Thread(target=turns.run, args=(stream, seq, lambda s=stream, q=seq: host.ran.append(f"{s}{q}")),
                                  kwargs={"batch_input": lambda s=stream: f"frame-{s}"})
        thread.start()
        host.threads.append(thread)
        host._until(lambda s=stream: s in turns._waiting)
    ran = host.release()
    assert sorted(ran[:2]) == ["a0", "b0"] and ran[2:] == ["c2"]  # c2 only once its lost c1 is given up
    assert seen == [["frame-a", "frame-b"]] or seen == [["frame-b", "frame-a"]]  # once, the running call's first
    assert list(turns.batches) == [2]


def test_a_failing_batch_costs_nothing_but_the_batch():
    def broken(inputs):
        raise RuntimeError("batched model failed")

    turns = FairTurns(prefetch=broken)
    host = Host(turns)
    for stream in ("a", "b"):
        thread = threading.Thread(target=turns.run, args=(stream, 0, lambda s=stream: host.ran.append(s)),
                                  kwargs={"batch_input": lambda: "x"})
        thread.start()
        host.threads.append(thread)
        host._until(lambda s=stream: s in turns._waiting)
    assert sorted(host.release()) == ["a", "b"] and not turns.batches
