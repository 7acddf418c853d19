"""An isolated executor for programs written by a policy: the environment half of tool-integrated RL.

ZeroTIR decouples generation from code execution: the policy writes a program, a sandbox runs it, and the
output comes back as environment tokens. The paper uses a remote HTTP sandbox because its local `exec`
fallback is no isolation at all. Here the sandbox is a separate worker process (`sandbox_worker.py`),
started with `python -I -S` in an empty scratch directory under these layers:

- rlimits set before anything runs: address space, file size, open files, core dumps, and RLIMIT_NPROC
  (a fork bomb hits it; root is exempt from it, so the worker drops to a dedicated unprivileged uid);
- fresh network and PID namespaces (`unshare --net --pid --fork --kill-child`) when running as root:
  no interface but a down loopback, and killing the worker takes every process it ever started with it;
- per program, a forked child with its own process group, CPU limit and wall-clock deadline, and an
  audit hook that refuses sockets, process creation, files outside the scratch directory and imports
  beyond an allow-list.

Failures come back as one-line messages; if the worker itself stops answering it is killed and restarted.
"""

from __future__ import annotations

import itertools
import json
import os
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WORKER_SOURCE = (Path(__file__).with_name("sandbox_worker.py")).read_text()
_UIDS = itertools.count()


@dataclass(frozen=True)
class ExecResult:
    """What one program did: its (truncated) stdout, or a one-line error."""

    ok: bool
    stdout: str
    error: str | None
    seconds: float
    truncated: bool = False

    @property
    def text(self) -> str:
        """The observation the policy sees: output on success, the error line otherwise."""
        return self.stdout if self.ok else f"error: {self.error}"


@dataclass
class Limits:
    """Resource limits of the sandbox. Defaults suit short programs over a stream's stored rows.
    grace_s: how long past the programs' own deadlines the worker may take before it counts as hung."""

    timeout_s: float = 2.0
    cpu_s: int = 1
    memory_mb: int = 256
    file_mb: int = 1
    max_procs: int = 32
    max_files: int = 32
    output_chars: int = 2000
    grace_s: float = 5.0


@dataclass
class Executor:
    """A restartable sandbox worker. Use as a context manager, or call `close()`.

    guard=False leaves out the audit hook so that tests can show the kernel layers hold on their own;
    isolate=False skips the namespaces and the uid switch (the default uses them when running as root).
    python: the worker's interpreter (default this one, or the system's if the sandbox uid cannot run it).
    info says which layers are in effect; restarts and executed count worker restarts and programs.
    """

    limits: Limits = field(default_factory=Limits)
    guard: bool = True
    isolate: bool = True
    python: str | None = None
    restarts: int = field(default=0, init=False)
    executed: int = field(default=0, init=False)
    info: dict[str, Any] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self._proc: subprocess.Popen | None = None
        self._buffer = b""
        self._ids = itertools.count(1)
        self.root = tempfile.mkdtemp(prefix="zerotir-sandbox-")
        self.uid = self._pick_uid()
        self._start()

    # -- lifecycle -------------------------------------------------------------------------------------
    def _pick_uid(self) -> int | None:
        """A uid of our own (no other process has it) so that RLIMIT_NPROC counts only our processes."""
        if not self.isolate or os.geteuid() != 0 or not shutil.which("unshare"):
            return None
        return 61000 + (os.getpid() * 16 + next(_UIDS)) % 4000

    def _command(self) -> list[str]:
        config = {"root": self.root, "cpu_s": self.limits.cpu_s, "memory_mb": self.limits.memory_mb,
                  "output_chars": self.limits.output_chars, "guard": self.guard}
        cmd = [self.python or sys.executable, "-I", "-S", "-c", WORKER_SOURCE, json.dumps(config)]
        if self.uid is None:
            return cmd
        return [shutil.which("unshare") or "unshare", "--net", "--pid", "--fork", "--kill-child",
                f"--setuid={self.uid}", f"--setgid={self.uid}", "--", *cmd]

    def _rlimits(self) -> list[tuple[int, int]]:
        """The kernel limits every process of the sandbox inherits (set between fork and exec)."""
        mb = 1 << 20
        limits = self.limits
        procs = limits.max_procs if self.uid is not None else limits.max_procs + _processes_of(os.getuid())
        return [(resource.RLIMIT_NPROC, procs), (resource.RLIMIT_NOFILE, limits.max_files),
                (resource.RLIMIT_FSIZE, limits.file_mb * mb), (resource.RLIMIT_CORE, 0),
                (resource.RLIMIT_AS, (limits.memory_mb + 64) * mb)]

    def _start(self) -> None:
        os.chmod(self.root, 0o700)
        if self.uid is not None:
            os.chown(self.root, self.uid, self.uid)
        self._buffer = b""
        rlimits = self._rlimits()

        def limit() -> None:
            for name, value in rlimits:
                resource.setrlimit(name, (value, value))

        self._proc = subprocess.Popen(self._command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, cwd=self.root, env={}, close_fds=True,
                                      start_new_session=True, preexec_fn=limit)
        line = self._read_line(time.monotonic() + 15.0)
        if line is None and self.uid is not None:
            self._kill()
            self._fall_back()
            self._start()
            return
        if line is None:
            self._kill()
            raise RuntimeError("the sandbox worker did not start")
        ready = json.loads(line)
        self.info = {"namespaces": ready["pid"] == 1, "uid": ready["uid"], "interfaces": ready["interfaces"],
                     "audit_hook": self.guard, "root": self.root}

    def _fall_back(self) -> None:
        """The unprivileged uid cannot run this interpreter (a venv under /root, say): try the system's
        Python next (the worker needs only the standard library), then give up the uid switch."""
        system = shutil.which("python3", path="/usr/bin:/bin")
        if self.python is None and system and os.path.realpath(system) != os.path.realpath(sys.executable):
            self.python = system
        else:
            self.uid = None

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()

    @property
    def pgid(self) -> int | None:
        """The worker's process group (everything the sandbox runs belongs to it or to its namespace)."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def restart(self) -> None:
        """Kill the worker (and, through its namespace, everything it started) and start a fresh one."""
        self._kill()
        self.restarts += 1
        self._wipe_root()
        self._start()

    def _wipe_root(self) -> None:
        for entry in Path(self.root).iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)

    def close(self) -> None:
        self._kill()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- running programs ------------------------------------------------------------------------------
    def _read_line(self, deadline: float) -> bytes | None:
        """One reply line from the worker, or None if none came by the deadline or the worker died."""
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def run(self, code: str, inputs: dict[str, Any] | None = None) -> ExecResult:
        """Run `code` with `inputs` bound as global variables; never raises for anything the code does."""
        return self.run_many([(code, inputs or {})])[0]

    def run_many(self, programs: list[tuple[str, dict[str, Any]]]) -> list[ExecResult]:
        """Run programs one after another, each in its own child, in one round trip to the worker (the
        rollout's batch of code blocks, like the paper's concurrent sandbox requests)."""
        if not programs:
            return []
        request_id = next(self._ids)
        request = {"id": request_id, "timeout_s": self.limits.timeout_s,
                   "programs": [{"code": code, "inputs": inputs} for code, inputs in programs]}
        payload = json.dumps(request).encode() + b"\n"
        started = time.monotonic()
        self.executed += len(programs)
        line = None
        for _ in range(2):
            if self._proc is None or self._proc.poll() is not None:
                self.restart()
            assert self._proc is not None and self._proc.stdin is not None
            try:
                self._proc.stdin.write(payload)
                self._proc.stdin.flush()
            except OSError:
                continue  # the worker was gone before it saw these programs: restart and send again
            line = self._read_line(started + (self.limits.timeout_s + 0.5) * len(programs) + self.limits.grace_s)
            break
        reply = json.loads(line) if line else None
        if reply is None or reply.get("id") != request_id or len(reply.get("results", ())) != len(programs):
            self.restart()
            failed = ExecResult(False, "", "executor failure: the worker stopped answering and was restarted",
                                round(time.monotonic() - started, 4))
            return [failed] * len(programs)
        return [ExecResult(bool(r["ok"]), r.get("stdout", ""), r.get("error"), float(r.get("seconds", 0.0)),
                           bool(r.get("truncated", False))) for r in reply["results"]]


def _processes_of(uid: int) -> int:
    """How many processes `uid` already runs (RLIMIT_NPROC counts them all when we cannot switch uid)."""
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                count += entry.stat().st_uid == uid
            except OSError:
                continue
    return count
