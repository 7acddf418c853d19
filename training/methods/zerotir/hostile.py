"""Hostile programs, and a check that the sandbox meets each with a clean one-line error and survives.

A policy exploring program space (or a prompt-injected question) can write anything. Each case below names
the error the sandbox must return and a bound on how long it may take. The first set runs with every
layer on; the second with the audit hook off, to show that the kernel layers alone (process limit, network
namespace, unprivileged uid, process-group and namespace kills) still contain what reaches them.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from training.methods.zerotir.executor import ExecResult, Executor, Limits

LOOP = "while True:\n    pass\n"
FORK_BOMB = "import os\nwhile True:\n    os.fork()\n"
STUBBORN_FORK_BOMB = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
SOCKET = ("import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\ns.settimeout(1)\n"
          "s.connect(('127.0.0.1', 22))\nprint('connected')\n")


@dataclass(frozen=True)
class Case:
    """A hostile program and what a clean outcome looks like: the error starts with `expect` (one of
    them, when a tuple: a busy loop meets the wall-clock and the CPU limit at about the same moment on
    an idle machine, and either one containing it is clean), or, with `truncated`, the output is cut,
    within `within_s` seconds."""

    name: str
    code: str
    expect: str | tuple[str, ...]
    within_s: float
    truncated: bool = False


GUARDED = (
    Case("infinite loop", LOOP, ("timeout", "cpu limit"), 3.0),
    Case("sleep forever", "import time\ntime.sleep(3600)\n", "timeout", 3.0),
    Case("fork bomb", FORK_BOMB, "forbidden operation: os.fork", 1.0),
    Case("memory bomb", "x = bytearray(8 * 1024 ** 3)\n", "memory limit", 1.0),
    # bytes(n) is calloc'd, so the creep reaches the limit at once even on a loaded machine.
    Case("memory creep", "xs = []\nwhile True:\n    xs.append(bytes(10 ** 7))\n", "memory limit", 3.0),
    Case("read /etc/passwd", "print(open('/etc/passwd').read())\n", "forbidden operation: open", 1.0),
    Case("read via ../", "print(open('../../../../etc/hostname').read())\n", "forbidden operation: open", 1.0),
    Case("write outside", "open('/tmp/zerotir-escape.txt', 'w').write('x')\n", "forbidden operation: open", 1.0),
    Case("socket to 127.0.0.1", SOCKET, "forbidden operation: import socket", 1.0),
    Case("shell command", "import os\nos.system('id')\n", "forbidden operation: os.system", 1.0),
    Case("subprocess", "import subprocess\nsubprocess.run(['id'])\n", "forbidden operation: import subprocess", 1.0),
    Case("huge file", "with open('big.bin', 'wb') as f:\n    f.write(b'x' * (8 << 20))\n",
         "OSError: [Errno 27] File too large", 1.0),
    Case("huge output", "print('x' * 10 ** 6)\n", "", 1.0, truncated=True),
)
KERNEL_ONLY = (
    Case("fork bomb, hook off", STUBBORN_FORK_BOMB, ("timeout", "cpu limit"), 4.0),
    Case("socket to 127.0.0.1, hook off", SOCKET, "OSError: [Errno 101] Network is unreachable", 2.0),
    Case("write /root, hook off", "open('/root/zerotir-escape.txt', 'w').write('x')\n",
         "PermissionError: [Errno 13] Permission denied", 1.0),
)


def held(case: Case, result: ExecResult, seconds: float) -> bool:
    """A clean outcome: the expected one-line error (or cut output), in time, the trainer never raised."""
    if seconds > case.within_s:
        return False
    if case.truncated:
        return result.ok and result.truncated
    expected = case.expect if isinstance(case.expect, tuple) else (case.expect,)
    return (not result.ok and result.error is not None and result.error.startswith(expected)
            and "\n" not in result.error)


def strays(uid: int | None) -> int:
    """Live processes (zombies awaiting their reaper do not count) the sandbox's uid runs besides the
    worker; -1 when the sandbox has no uid of its own."""
    if uid is None:
        return -1
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                live = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
                count += entry.stat().st_uid == uid and live
            except (OSError, IndexError):
                continue
    return max(count - 1, 0)


def settled_strays(uid: int | None, wait_s: float = 2.0) -> int:
    """Strays left once killed processes have had `wait_s` to exit (a SIGKILL is not instantaneous)."""
    deadline = time.monotonic() + wait_s
    while (count := strays(uid)) > 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    return count


def run_suite(executor: Executor, cases: tuple[Case, ...]) -> list[dict]:
    """Each case, then a benign program, so that survival is shown after every attack."""
    rows = []
    for case in cases:
        started = time.monotonic()
        result = executor.run(case.code)
        seconds = time.monotonic() - started
        after = executor.run("print(6 * 7)")
        rows.append({"program": case.name, "outcome": result.error or ("output cut" if result.truncated else "ran"),
                     "seconds": round(seconds, 2), "clean": held(case, result, seconds),
                     "survived": after.ok and after.stdout.strip() == "42", "strays": settled_strays(executor.uid)})
    return rows


def kill_worker(executor: Executor) -> dict:
    """Kill the worker from outside, as a crash would, and check the next program still runs."""
    if executor.pgid is not None:
        os.killpg(executor.pgid, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while executor.pgid is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    before = executor.restarts
    result = executor.run("print(6 * 7)")
    return {"program": "worker killed from outside", "outcome": f"restarted {executor.restarts - before}x",
            "seconds": result.seconds, "clean": executor.restarts == before + 1,
            "survived": result.ok and result.stdout.strip() == "42", "strays": settled_strays(executor.uid)}


def sandbox_report(timeout_s: float = 1.0) -> tuple[list[dict], dict]:
    """Run both suites; return their rows and the isolation actually in effect."""
    limits = Limits(timeout_s=timeout_s)
    with Executor(limits=limits) as guarded:
        rows = run_suite(guarded, GUARDED) + [kill_worker(guarded)]
        info = dict(guarded.info)
    with Executor(limits=limits, guard=False) as bare:
        rows += run_suite(bare, KERNEL_ONLY) if bare.info.get("namespaces") else []
    return rows, info
