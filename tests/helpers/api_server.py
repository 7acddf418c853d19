"""A real `foresight serve` (uvicorn) on a loopback port, in a subprocess, for the API tests and benchmark."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


class ApiServer:
    def __init__(self, db: Path, port: int, *args: str, api_key: str | None = None):
        self.port = port
        self.db = db
        self.api_key = api_key
        self.url = f"http://127.0.0.1:{port}"
        cmd = [sys.executable, "-m", "app.server", "--db", str(db), "--port", str(port), *args]
        if api_key:
            cmd += ["--api-key", api_key]
        self.log = open(db.parent / "server.log", "w")
        env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True)

    @property
    def headers(self) -> dict:
        return {"X-API-Key": self.api_key} if self.api_key else {}

    def client(self, **kw) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=self.headers, timeout=kw.pop("timeout", 60), **kw)

    def wait_ready(self, timeout: float = 180) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}: {self.tail()}")
            try:
                if httpx.get(self.url + "/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise TimeoutError(f"server not ready in {timeout} s: {self.tail()}")

    def tail(self) -> str:
        self.log.flush()
        return Path(self.log.name).read_text()[-3000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.log.close()


def wait_job(client: httpx.Client, job_id: str, timeout: float = 240) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        job = client.get(f"/v1/jobs/{job_id}").json()
        if job["status"] in ("done", "failed"):
            return job
        time.sleep(0.3)
    raise TimeoutError(f"job {job_id} not finished in {timeout} s")


def wait_until_not(c, stream_id: str, statuses: tuple[str, ...], timeout: float = 240) -> dict:
    """The stream's info once its status is none of `statuses` (a bound on the wait, not a timed assertion)."""
    deadline = time.monotonic() + timeout
    while (info := c.get(f"/v1/streams/{stream_id}").json())["status"] in statuses:
        if time.monotonic() > deadline:
            raise TimeoutError(f"stream still {info['status']} after {timeout} s")
        time.sleep(0.3)
    return info
