"""HTTP(S) reads for FFmpeg under a source policy, so that FFmpeg never opens a network address we did not check.

Checking a URL before FFmpeg sees it is not enough: FFmpeg resolves the host again (a name can rebind to
127.0.0.1 in between), follows redirects on its own, and keeps reloading a live HLS playlist whose new segments
may name any host. For API-added HTTP and HLS sources the ingest therefore hands PyAV an `io_open` callable
(`GuardedHttp.open`): every URL FFmpeg wants (the source, each playlist reload, each segment) is checked by the
`SourcePolicy` and fetched here with httpx, connecting to the address that was checked (the host name goes in
the Host header and TLS SNI), following redirects one checked hop at a time. Seeks become Range requests.
"""

from __future__ import annotations

import io
from urllib.parse import urljoin, urlsplit

import httpx

from pipelines.media.policy import SourcePolicy, SourceRefused

SKIP_LIMIT = 256 * 1024  # a forward seek shorter than this reads on instead of asking for a new range
DISCARD_LIMIT = 64 * 1024 * 1024  # a server that ignores Range may make us skip at most this much


class GuardedHttp:
    """The `io_open` callable handed to PyAV for one source: each URL opened becomes a checked `PinnedReader`."""

    def __init__(self, policy: SourcePolicy, timeout_s: float = 10.0):
        self.policy = policy
        self.timeout_s = timeout_s

    def open(self, url: str, flags: int, options: dict) -> PinnedReader:
        if flags & 2:  # AVIO_FLAG_WRITE: a source is only ever read
            raise PermissionError(13, "writing is not allowed for network sources")
        return PinnedReader(self.policy, url, self.timeout_s)


class PinnedReader(io.RawIOBase):
    """A readable, seekable view of one HTTP resource, fetched only from checked addresses."""

    def __init__(self, policy: SourcePolicy, url: str, timeout_s: float):
        super().__init__()
        self.policy = policy
        self.url = url
        self.client = httpx.Client(timeout=timeout_s, follow_redirects=False, trust_env=False, verify=False)
        self.size: int | None = None
        self.pos = 0  # where the caller is
        self._at = 0  # where the open response is
        self._response: httpx.Response | None = None
        self._chunks = None
        self._buf = b""
        self._fetch(0)

    # -- fetching ----------------------------------------------------------------------------------------
    def _request(self, url: str, offset: int) -> httpx.Response:
        """One GET of `url` from `offset`, redirects followed hop by hop, each target checked and pinned."""
        for _ in range(self.policy.max_hops + 1):
            try:
                target, host = self.policy.pin(url)
            except SourceRefused as exc:
                raise PermissionError(13, f"source refused: {exc.reason}") from None
            parts = urlsplit(url)
            headers = {"Host": host, "Accept-Encoding": "identity"}
            if offset:
                headers["Range"] = f"bytes={offset}-"
            extensions = {"sni_hostname": parts.hostname} if parts.scheme.lower() == "https" else {}
            request = self.client.build_request("GET", target, headers=headers, extensions=extensions)
            try:
                response = self.client.send(request, stream=True)  # user info in the URL: basic auth
            except httpx.TimeoutException:
                raise TimeoutError(f"timed out reading {host}") from None
            except httpx.HTTPError as exc:
                raise ConnectionError(f"cannot fetch from {host} ({type(exc).__name__})") from None
            if response.is_redirect and "location" in response.headers:
                response.close()
                url = urljoin(url, response.headers["location"])
                continue
            if response.status_code >= 400:
                response.close()
                if response.status_code == 404:
                    raise FileNotFoundError(2, "not found")
                raise ConnectionError(f"server returned HTTP {response.status_code}")
            self.url = url
            return response
        raise ConnectionError("too many redirects")

    def _fetch(self, offset: int) -> None:
        self._drop_response()
        response = self._request(self.url, offset)
        start = 0
        if response.status_code == 206:
            span = response.headers.get("content-range", "")  # "bytes 100-199/2000"
            try:
                start = int(span.split()[1].split("-")[0])
                total = span.rsplit("/", 1)[1]
                self.size = int(total) if total != "*" else self.size
            except (IndexError, ValueError):
                response.close()
                raise ConnectionError("server sent a malformed Content-Range") from None
        elif "content-length" in response.headers and response.headers["content-length"].isdigit():
            self.size = int(response.headers["content-length"])
        # chunks as they arrive: a fixed chunk size waited for 64 kB, seconds of a small camera's pictures
        self._response, self._chunks, self._buf, self._at = response, response.iter_bytes(), b"", start
        if start < offset:  # the server ignored Range: read up to the offset
            if offset - start > DISCARD_LIMIT:
                raise OSError(29, "server does not support seeking")
            self._skip(offset - start)

    def _more(self) -> bool:
        try:
            self._buf += next(self._chunks)
            return True
        except StopIteration:
            return False
        except httpx.TimeoutException:
            raise TimeoutError("timed out reading the source") from None
        except httpx.HTTPError as exc:
            raise ConnectionError(f"connection lost ({type(exc).__name__})") from None

    def _skip(self, n: int) -> None:
        while n > 0:
            if not self._buf and not self._more():
                return
            take = min(n, len(self._buf))
            self._buf, self._at, n = self._buf[take:], self._at + take, n - take

    def _drop_response(self) -> None:
        if self._response is not None:
            self._response.close()
            self._response = None

    # -- the file interface PyAV uses --------------------------------------------------------------------
    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        if self.pos != self._at:  # seeks are lazy: size queries and seek-backs cost no request
            if 0 < self.pos - self._at <= SKIP_LIMIT:
                self._skip(self.pos - self._at)
            if self.pos != self._at:
                self._fetch(self.pos)
        if n is None or n < 0:
            while self._more():
                pass
        elif not self._buf:  # what has arrived, up to n: a live stream's next bytes may be a second away
            self._more()
        out = self._buf if n is None or n < 0 else self._buf[:n]
        self._buf = self._buf[len(out):]
        self._at += len(out)
        self.pos = self._at
        return out

    def seek(self, offset: int, whence: int = 0) -> int:
        if whence == 0:
            target = offset
        elif whence == 1:
            target = self.pos + offset
        elif whence == 2 and self.size is not None:
            target = self.size + offset
        else:
            # No size (a camera's endless stream, sent without a length): FFmpeg's probes ask for the end and
            # take a negative answer as "cannot", as its own HTTP reader answers; an exception here would be
            # kept by PyAV and raised from the open, so a camera's stream never opened.
            return -1
        if target < 0:
            raise OSError(22, "negative seek position")
        self.pos = target
        return target

    def tell(self) -> int:
        return self.pos

    def close(self) -> None:
        if not self.closed:
            self._drop_response()
            self.client.close()
        super().close()
