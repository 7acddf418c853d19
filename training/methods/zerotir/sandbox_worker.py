"""The process inside the sandbox: runs one untrusted program per request in a forked, locked-down child.

This file is not imported by Foresight; `executor.py` starts it as `python -I -S -c <this source> <config>`
(stdlib only), usually as PID 1 of fresh PID and network namespaces under an unprivileged uid. Requests
and replies are JSON lines on stdin/stdout. Each program runs in its own child so that nothing it does
(monkey-patching, leaked memory, stray state) reaches the next one, and so that the child can be killed
by process group on a deadline. Inside the child an audit hook refuses sockets, process creation, file
access outside the scratch directory and imports beyond a short allow-list; the kernel limits underneath
(rlimits, namespaces, uid) hold even where the hook would not.
"""

import bisect
import builtins
import collections
import datetime
import decimal
import fractions
import functools
import heapq
import io
import itertools
import json
import math
import operator
import os
import re
import resource
import select
import signal
import statistics
import string
import sys
import time

CONFIG = json.loads(sys.argv[1])
ROOT = os.path.realpath(CONFIG["root"])
PRELOADED = (bisect, collections, datetime, decimal, fractions, functools, heapq, itertools, json, math,
             operator, re, statistics, string, time)
ALLOWED_IMPORTS = frozenset(m.__name__ for m in PRELOADED)
DENIED_PREFIXES = ("os.", "socket.", "subprocess.", "ctypes.", "shutil.", "resource.", "signal.", "pty.",
                   "fcntl.", "mmap.", "sqlite3.", "urllib.", "http.", "ftplib.", "smtplib.", "glob.",
                   "tempfile.", "syslog.", "sys.addaudithook", "sys.settrace", "sys.setprofile", "gc.")
TOO_LONG = "output too long"


class Forbidden(PermissionError):
    """Raised by the audit hook; its message is already the clean line the policy sees."""


def refuse(event, args):
    """Audit hook: raise on every operation a program over stored events has no business doing."""
    if event == "open":
        path = args[0]
        if isinstance(path, bytes):
            path = path.decode(errors="replace")
        if isinstance(path, str):
            real = os.path.realpath(path)
            if real == ROOT or real.startswith(ROOT + os.sep):
                return
        raise Forbidden(f"forbidden operation: open {str(path)[:80]!r} outside the sandbox")
    if event == "import":
        if args[0].partition(".")[0] not in ALLOWED_IMPORTS:
            raise Forbidden(f"forbidden operation: import {args[0]}")
        return
    if event.startswith(DENIED_PREFIXES):
        raise Forbidden(f"forbidden operation: {event}")


class Capture(io.TextIOBase):
    """stdout/stderr for the program: keeps the first `limit` characters and notes that more came."""

    def __init__(self, limit):
        self.parts, self.size, self.limit, self.overflow = [], 0, limit, False

    def writable(self):
        return True

    def write(self, text):
        room = self.limit - self.size
        if len(text) > room:
            self.overflow = True
            text = text[:max(room, 0)]
        self.parts.append(text)
        self.size += len(text)
        return len(text)

    def value(self):
        return "".join(self.parts)


def one_line(exc):
    """`Type: message` on one line, with the scratch directory's path shortened to `.`."""
    if isinstance(exc, Forbidden):
        return str(exc)[:200]
    text = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
    return text.replace(ROOT + os.sep, "").replace(ROOT, ".")[:200]


def child(request, out_fd):
    """Runs in the forked child: lock down, execute, write one JSON result, exit without cleanup."""
    os.setpgid(0, 0)
    me = os.getpid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    cpu = CONFIG["cpu_s"]
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    memory = CONFIG["memory_mb"] << 20
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    capture = Capture(CONFIG["output_chars"])
    sys.stdout = sys.stderr = capture
    reply = {"ok": True, "error": None}
    scope = {"__name__": "__sandbox__", "__builtins__": builtins, **request.get("inputs", {})}
    try:
        program = compile(request["code"], "<program>", "exec")
        if CONFIG["guard"]:
            sys.addaudithook(refuse)
        exec(program, scope)
    except MemoryError:
        scope = None
        reply = {"ok": False, "error": f"memory limit: the program needed more than {CONFIG['memory_mb']} MB"}
    except SystemExit as exc:
        if exc.code not in (0, None):
            reply = {"ok": False, "error": f"SystemExit: {exc.code}"[:200]}
    except BaseException as exc:  # noqa: BLE001 - every failure of untrusted code becomes a message
        scope = None
        reply = {"ok": False, "error": one_line(exc)}
    if os.getpid() != me:
        os._exit(0)
    reply["stdout"] = capture.value()
    reply["truncated"] = capture.overflow
    os.write(out_fd, json.dumps(reply).encode()[:60000])
    os._exit(0)


def wait_for(pid, deadline):
    """Waits for the child until the deadline; returns its wait status, or None when it is still running.
    A pidfd wakes us the moment the child exits; without one (old kernels) we poll."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    delay = 0.0005
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return status
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if pidfd is None:
                time.sleep(min(delay, left))
                delay = min(delay * 2, 0.02)
            else:
                select.select([pidfd], [], [], left)
    finally:
        if pidfd is not None:
            os.close(pidfd)


def sweep():
    """Kill and reap whatever a program left behind. As PID 1 of our own namespace, kill(-1) reaches only
    the namespace, so every stray (a fork-bomb survivor, a daemonised child) goes."""
    if os.getpid() == 1:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0 and os.getpid() != 1:
            return
        if pid == 0:
            try:
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                pass
            time.sleep(0.001)


def describe(status):
    """A wait status that carries no JSON result, as one clean line."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig in (signal.SIGXCPU, signal.SIGKILL):
            return f"cpu limit: the program used more than {CONFIG['cpu_s']} s of CPU time"
        return f"crashed: the program was killed by {signal.Signals(sig).name}"
    return f"crashed: the program exited with status {os.WEXITSTATUS(status)} before answering"


def run(request, timeout_s):
    """Fork, wait with a wall-clock deadline, kill the process group if it passes, read the result."""
    read_fd, write_fd = os.pipe()
    start = time.monotonic()
    try:
        pid = os.fork()
    except OSError as exc:
        os.close(read_fd)
        os.close(write_fd)
        return {"ok": False, "error": f"executor busy: cannot start the program ({exc.strerror})",
                "stdout": "", "truncated": False, "seconds": 0.0}
    if pid == 0:
        try:
            os.close(read_fd)
            child(request, write_fd)
        finally:
            os._exit(70)
    os.close(write_fd)
    status = wait_for(pid, start + timeout_s)
    timed_out = status is None
    if timed_out:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _, status = os.waitpid(pid, 0)
    sweep()
    data = b""
    while select.select([read_fd], [], [], 0)[0]:
        chunk = os.read(read_fd, 65536)
        if not chunk:
            break
        data += chunk
    os.close(read_fd)
    seconds = round(time.monotonic() - start, 4)
    if timed_out:
        return {"ok": False, "error": f"timeout: no answer within {timeout_s:g} s; process group killed",
                "stdout": "", "truncated": False, "seconds": seconds}
    try:
        reply = json.loads(data)
    except ValueError:
        reply = {"ok": False, "error": describe(status), "stdout": "", "truncated": False}
    reply["seconds"] = seconds
    return reply


def main():
    with open("/proc/self/net/dev") as dev:
        interfaces = sorted(line.split(":")[0].strip() for line in dev.readlines()[2:])
    ready = {"ready": True, "pid": os.getpid(), "uid": os.getuid(), "interfaces": interfaces}
    sys.stdout.write(json.dumps(ready) + "\n")
    sys.stdout.flush()
    for line in sys.stdin:
        request = json.loads(line)
        results = [run(program, request["timeout_s"]) for program in request["programs"]]
        sys.stdout.write(json.dumps({"id": request["id"], "results": results}) + "\n")
        sys.stdout.flush()


main()
