"""No Ray process outlives the process that started a local cluster, even after `kill -9` of it.

Ray gives GCS and the raylet a parent-death signal, but the raylet's children (the dashboard and runtime-env
agents, workers) can be left behind when the driver dies without `ray.shutdown()`. `start_reaper()` starts a
small watcher process in its own session; it notes the owner's descendants every second, and once the owner
is gone it ends them (SIGTERM, then SIGKILL), checking each process's start time so a reused pid is never hit.

A worker started in the last second before the owner died is not among the noted descendants, and once the
raylet dies it is nobody's descendant. So `start_reaper` also puts a token in the owner's environment
(`FORESIGHT_REAPER_TOKEN`), which everything it starts afterwards inherits (GCS, raylet, agents, workers), and
the reaper ends every process whose initial environment holds that token, too.

Run as `python -m pipelines.spine.reaper OWNER_PID [TOKEN]`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time) of `pid`, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return int(fields[1]), int(fields[19])


def descendants(root: int) -> dict[int, int]:
    """pid -> start time of every live descendant of `root`."""
    children: dict[int, list[int]] = {}
    starts: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(int(entry))
            if st is not None:
                children.setdefault(st[0], []).append(int(entry))
                starts[int(entry)] = st[1]
    out, todo = {}, [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in out:
                out[child] = starts[child]
                todo.append(child)
    return out


def _alive(pid: int, start: int) -> bool:
    st = _stat(pid)
    return st is not None and st[1] == start


TOKEN_VARIABLE = "FORESIGHT_REAPER_TOKEN"


def marked(token: str) -> dict[int, int]:
    """pid -> start time of every process whose initial environment holds `TOKEN_VARIABLE=token`."""
    needle = f"{TOKEN_VARIABLE}={token}".encode()
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                environ = Path(f"/proc/{entry}/environ").read_bytes()
            except OSError:  # gone, or not ours
                continue
            st = _stat(int(entry))
            if st is not None and needle in environ.split(b"\0"):
                out[int(entry)] = st[1]
    return out


def reap(owner: int, token: str | None = None, poll_s: float = 1.0) -> None:
    owner_start = _stat(owner)
    if owner_start is None:
        return
    seen: dict[int, int] = {}
    while _alive(owner, owner_start[1]):
        current = descendants(owner)
        current.pop(os.getpid(), None)
        seen = {p: s for p, s in {**seen, **current}.items() if _alive(p, s)}
        time.sleep(poll_s)
    for pid in list(seen):  # orphans of orphans too
        seen.update({p: s for p, s in descendants(pid).items() if p != os.getpid()})
    if token:  # and whatever it started that was not seen yet
        seen.update({p: s for p, s in marked(token).items() if p != os.getpid()})
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 1.0)):
        for pid, start in seen.items():
            if _alive(pid, start):
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and any(_alive(p, s) for p, s in seen.items()):
            time.sleep(0.1)


def start_reaper() -> subprocess.Popen | None:
    """Watch this process (Linux only; a no-op elsewhere)."""
    if not Path("/proc/self/stat").exists():
        return None
    root = Path(__file__).resolve().parents[2]
    token = f"{os.getpid()}-{_stat(os.getpid())[1]}"
    os.environ[TOKEN_VARIABLE] = token  # inherited by what this process starts from now on (Ray's processes)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    return subprocess.Popen([sys.executable, "-m", "pipelines.spine.reaper", str(os.getpid()), token], cwd=root,
                            env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


if __name__ == "__main__":
    reap(int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else None)
