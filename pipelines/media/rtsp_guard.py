"""RTSP for FFmpeg under a source policy: every byte goes to the checked address, and redirects are refused.

FFmpeg's RTSP demuxer follows a `3xx` answer (to OPTIONS, DESCRIBE, ...) on its own: it closes the
connection and connects to whatever `Location` names, 127.0.0.1 included. It has no option to stop that, and
its RTSP connection does not go through PyAV's `io_open`, so the HTTP guard (`guarded_io`) cannot see it.
So for API-added RTSP sources FFmpeg talks to an `RtspRelay` on a loopback port of this process instead:
- the relay connects only to the address the policy checked (`SourcePolicy.pin`; TLS for `rtsps`, the host
  name as SNI), whatever the RTSP URLs inside the session say;
- it reads every message the camera sends; a redirect (a `3xx` answer, or a `REDIRECT` request) is never
  passed on: the relay closes both sides, so FFmpeg has no `Location` to follow, and `refused` says why;
- a SETUP answer for RTP over UDP gets `source=<checked address>`, so RTP/RTCP packets FFmpeg sends go to the
  camera and nowhere a `source=` or `destination=` would point; multicast transports are refused.
RTP interleaved over TCP (`$` frames) passes through unchanged.
"""

from __future__ import annotations

import asyncio
import re
import socket
import ssl
import threading
from urllib.parse import urlsplit, urlunsplit

from pipelines.media.policy import SourcePolicy
from pipelines.media.redact import redact

DEFAULT_PORTS = {"rtsp": 554, "rtsps": 322}
MAX_HEADER = 64 * 1024
MAX_BODY = 1 << 20
MAX_CONNECTIONS = 8  # FFmpeg opens one per session; a reopen makes a new relay


class RtspRelay:
    """One source's relay: `url` is what FFmpeg opens (rtsp:// on 127.0.0.1, user info kept)."""

    def __init__(self, policy: SourcePolicy, source: str, timeout_s: float = 10.0):
        pinned, _ = policy.pin(source)  # SourceRefused when the host leaves the allowed networks
        parts, original = urlsplit(pinned), urlsplit(source)
        self.address = parts.hostname
        self.port = parts.port or DEFAULT_PORTS.get(parts.scheme.lower(), 554)
        self.tls_name = original.hostname if parts.scheme.lower() == "rtsps" else None
        self.timeout_s = timeout_s
        self.refused: str | None = None  # why a camera's message was not passed on (a redirect, multicast)
        self.upstream_error: str | None = None  # why the checked address could not be reached
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(timeout_s)
        userinfo = original.netloc.rpartition("@")[0]
        netloc = (f"{userinfo}@" if userinfo else "") + f"127.0.0.1:{self._listener.getsockname()[1]}"
        self.url = urlunsplit(("rtsp", netloc, original.path or "/", original.query, ""))
        self._closed = threading.Event()
        threading.Thread(target=self._accept, name="rtsp-relay", daemon=True).start()

    def close(self) -> None:
        self._closed.set()
        self._listener.close()

    def _accept(self) -> None:
        served = 0
        while not self._closed.is_set() and served < MAX_CONNECTIONS:
            try:
                client, _ = self._listener.accept()
            except OSError:  # timed out waiting, or closed
                break
            served += 1
            threading.Thread(target=self._serve, args=(client,), name="rtsp-relay-conn", daemon=True).start()
        self.close()

    async def _upstream(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.tls_name is None:
            return await asyncio.open_connection(self.address, self.port)
        context = ssl.create_default_context()  # like FFmpeg's own TLS (tls_verify=0): encrypted, not authenticated
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        return await asyncio.open_connection(self.address, self.port, ssl=context,
                                             server_hostname="" if _is_ip(self.tls_name) else self.tls_name)

    def _serve(self, client: socket.socket) -> None:
        try:
            asyncio.run(self._relay(client))
        finally:
            client.close()

    async def _relay(self, client: socket.socket) -> None:
        """Both directions in one event loop: a TLS session is never read and written from two threads at once."""
        try:
            up_reader, up_writer = await asyncio.wait_for(self._upstream(), self.timeout_s)
        except OSError as exc:  # TimeoutError included
            self.upstream_error = ("connection refused" if isinstance(exc, ConnectionRefusedError) else
                                   f"unreachable (no answer within {self.timeout_s:g} s)"
                                   if isinstance(exc, TimeoutError) else f"cannot connect ({exc.strerror or exc})")
            return
        client_reader, client_writer = await asyncio.open_connection(sock=client)
        tasks = {asyncio.create_task(_copy(client_reader, up_writer)),
                 asyncio.create_task(self._pass_answers(up_reader, client_writer))}
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for writer in (client_writer, up_writer):
            writer.transport.abort()

    async def _pass_answers(self, upstream: asyncio.StreamReader, client: asyncio.StreamWriter) -> None:
        """Forward what the camera sends, message by message, checking each RTSP message."""
        buf = b""
        try:
            while True:
                if buf[:1] == b"$":  # interleaved RTP/RTCP: $ channel length(2) payload
                    while len(buf) < 4:
                        buf = await _more(upstream, buf)
                    end = 4 + int.from_bytes(buf[2:4], "big")
                    while len(buf) < end:
                        buf = await _more(upstream, buf)
                    await _send(client, buf[:end])
                    buf = buf[end:]
                    continue
                head_end = buf.find(b"\r\n\r\n")
                if head_end < 0:
                    if len(buf) > MAX_HEADER:
                        raise ValueError("RTSP header too long")
                    buf = await _more(upstream, buf)
                    continue
                head = buf[:head_end].decode("latin-1")
                length = int((re.search(r"(?im)^content-length:\s*(\d+)", head) or [0, "0"])[1])
                if length > MAX_BODY:
                    raise ValueError("RTSP body too long")
                while len(buf) < head_end + 4 + length:
                    buf = await _more(upstream, buf)
                body, buf = buf[head_end + 4:head_end + 4 + length], buf[head_end + 4 + length:]
                head = self._checked(head)
                if head is None:
                    return
                await _send(client, head.encode("latin-1") + b"\r\n\r\n" + body)
        except (OSError, ValueError):
            return

    def _checked(self, head: str) -> str | None:
        """The message head to pass on, or None (and `refused` set) for a redirect or a multicast transport."""
        first = head.split("\r\n", 1)[0]
        status = re.match(r"RTSP/\d\.\d\s+(\d{3})", first)
        location = re.search(r"(?im)^location:\s*(\S+)", head)
        where = f" to {redact(location[1])}" if location else ""
        if status and 300 <= int(status[1]) < 400:
            self.refused = f"RTSP redirect ({status[1]}){where} refused"
            return None
        if not status and first.upper().startswith("REDIRECT"):
            self.refused = f"RTSP REDIRECT request{where} refused"
            return None
        transport = re.search(r"(?im)^transport:[^\r\n]*", head)
        if transport:
            line = transport[0]
            if "multicast" in line.lower():
                self.refused = "RTSP multicast transport refused"
                return None
            if not re.search(r"RTP/AVP(F)?/TCP|interleaved=", line, re.IGNORECASE):  # RTP over UDP
                fixed = re.sub(r"(?i);\s*(source|destination)=[^;\r\n]*", "", line) + f";source={self.address}"
                head = head.replace(line, fixed, 1)
        return head


async def _copy(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    """FFmpeg's requests to the camera, as they are."""
    try:
        while data := await src.read(65536):
            await _send(dst, data)
    except OSError:
        pass


async def _more(reader: asyncio.StreamReader, buf: bytes) -> bytes:
    data = await reader.read(65536)
    if not data:
        raise ConnectionError("closed")
    return buf + data


async def _send(writer: asyncio.StreamWriter, data: bytes) -> None:
    writer.write(data)
    await writer.drain()


def _is_ip(host: str) -> bool:
    try:
        socket.inet_pton(socket.AF_INET6 if ":" in host else socket.AF_INET, host)
        return True
    except OSError:
        return False
