"""Which network sources a server may open on a caller's behalf (SSRF guard), and URL redaction.

`SourcePolicy` answers "may this URL be fetched?": the scheme must be allowed, and every address the host
resolves to must lie in an allowed network and in no denied one. It is checked after DNS resolution, on
every HTTP redirect (followed here, one hop at a time) and on every HLS playlist hop (variant playlists and
segment hosts are read and checked before FFmpeg sees the URL, and FFmpeg gets a protocol whitelist so a
playlist cannot point it at `file:` or another protocol). Local paths and devices are refused for API
callers. Refusals raise `SourceRefused`, whose message is deliberately the same for every reason, so an
API caller learns nothing about what exists on the server's networks or disk; the reason is kept in
`SourceRefused.reason` for the operator's log.

`redact_url` removes userinfo and token-like query parameters from a URL before it is shown anywhere.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import re
import socket
import threading
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

GENERIC_REFUSAL = "source refused or unreachable"
SECRET_PARAMS = re.compile(r"(token|key|apikey|api_key|password|passwd|pwd|secret|sig|signature|auth|"
                           r"credential|session|jwt|bearer|access|private)", re.IGNORECASE)

# Private camera LANs: RFC 1918, carrier-grade NAT, IPv6 unique-local. Public addresses are allowed too
# (`allow_public`); loopback, link-local, multicast and unspecified addresses are in none of these.
DEFAULT_NETWORKS = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7")
# Refused even when an allowed network covers them: cloud metadata endpoints and unspecified addresses.
DEFAULT_DENIED = ("169.254.169.254/32", "fd00:ec2::254/128", "0.0.0.0/8", "::/128")
DEFAULT_SCHEMES = ("rtsp", "rtsps", "http", "https")
FFMPEG_PROTOCOLS = {"rtsp": "rtsp,rtp,udp,tcp,tls", "rtsps": "rtsp,rtsps,rtp,udp,tcp,tls",
                    "http": "http,https,tcp,tls,hls,crypto", "https": "http,https,tcp,tls,hls,crypto"}


class SourceRefused(Exception):
    """The policy refused a source. `str()` is the generic message; `reason` says why (for logs, the CLI)."""

    def __init__(self, reason: str):
        super().__init__(GENERIC_REFUSAL)
        self.reason = reason


def _net(text: str):
    return ipaddress.ip_network(text, strict=False)


@dataclass(frozen=True)
class SourcePolicy:
    """Allowed schemes and networks (CIDRs) for sources and webhook targets named by remote callers."""

    schemes: tuple[str, ...] = DEFAULT_SCHEMES
    networks: tuple[str, ...] = DEFAULT_NETWORKS
    allow_public: bool = True  # globally routable addresses (cameras and streams on the internet)
    denied: tuple[str, ...] = DEFAULT_DENIED
    resolve_timeout_s: float = 5.0
    max_hops: int = 5  # redirects plus playlist levels
    allow_devices: bool = False  # /dev/videoN for API callers
    hosts: tuple[str, ...] = ()  # when set, host names must match one of these ("cam*.lan"); others are refused
    # before any DNS lookup (IP literals are judged by the networks alone)

    def __post_init__(self) -> None:
        try:
            for n in (*self.networks, *self.denied):
                _net(n)
        except ValueError as exc:
            raise ValueError(f"source policy: not a network (CIDR): {exc}") from None
        object.__setattr__(self, "schemes", tuple(s.lower() for s in self.schemes))

    def address_allowed(self, address: str) -> bool:
        ip = ipaddress.ip_address(address.split("%")[0])
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        if any(ip in _net(n) for n in self.denied if _net(n).version == ip.version):
            return False
        if any(ip in _net(n) for n in self.networks if _net(n).version == ip.version):
            return True
        return self.allow_public and ip.is_global and not ip.is_multicast

    def resolve(self, host: str) -> list[str]:
        """Every address `host` resolves to (a bounded wait); SourceRefused when it does not resolve."""
        out: list = []

        def lookup():
            try:
                out.extend({info[4][0] for info in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)})
            except (OSError, UnicodeError) as exc:
                out.append(exc)

        t = threading.Thread(target=lookup, daemon=True)
        t.start()
        t.join(self.resolve_timeout_s)
        if t.is_alive() or not out or isinstance(out[0], BaseException):
            raise SourceRefused(f"cannot resolve {host!r}")
        return out

    def check_url(self, url: str) -> str:
        """Scheme, then every resolved address of the host; SourceRefused with the reason. Returns the address
        to connect to (IPv4 first), so a caller can pin the connection to what was checked."""
        try:
            parts = urlsplit(url)
            host = parts.hostname
            parts.port  # noqa: B018 (raises ValueError for a bad port)
        except ValueError:
            raise SourceRefused("not a valid URL") from None
        scheme = parts.scheme.lower()
        if scheme not in self.schemes:
            raise SourceRefused(f"scheme {scheme or '(none)'!r} is not allowed")
        if not host:
            raise SourceRefused("URL without a host")
        if self.hosts and not _is_ip(host) and not any(fnmatch.fnmatch(host.lower(), h.lower()) for h in self.hosts):
            raise SourceRefused(f"host {host!r} is not in the allowed host names")
        addresses = sorted(self.resolve(host), key=lambda a: (":" in a, a))
        for address in addresses:
            if not self.address_allowed(address):
                raise SourceRefused(f"{host} resolves to {address}, outside the allowed networks")
        return addresses[0]

    def pin(self, url: str) -> tuple[str, str]:
        """`url` with its host replaced by the checked address it resolves to (user info kept), and the original
        host[:port] for the Host header and TLS SNI: a connection to the result cannot be rebound elsewhere."""
        address = self.check_url(url)
        parts = urlsplit(url)
        userinfo, _, hostport = parts.netloc.rpartition("@")
        netloc = (f"{userinfo}@" if userinfo else "") + (f"[{address}]" if ":" in address else address)
        netloc += f":{parts.port}" if parts.port else ""
        return urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, "")), hostport

    def check_source_quick(self, source: str) -> None:
        """What can be checked without fetching anything: local paths, the scheme, the host's addresses."""
        source = source.strip()
        if "://" not in source:
            if self.allow_devices and re.fullmatch(r"/dev/video\d+", source):
                return
            raise SourceRefused("local paths are not accepted from API callers")
        self.check_url(source)

    def check_source(self, source: str) -> str:
        """Check a source named by a remote caller and follow HTTP redirects and HLS playlists, checking each
        hop; returns the URL to hand to FFmpeg (the last redirect target). SourceRefused otherwise."""
        source = source.strip()
        self.check_source_quick(source)
        if "://" in source and urlsplit(source).scheme.lower() in ("http", "https"):
            return self._follow(source, self.max_hops)
        return source

    def _follow(self, url: str, hops: int) -> str:
        """Follow redirects (each target checked) and, for a playlist, check every URI it names."""
        import httpx

        with httpx.Client(follow_redirects=False, timeout=self.resolve_timeout_s, trust_env=False) as client:
            for _ in range(hops + 1):
                try:
                    with client.stream("GET", url) as r:
                        if r.is_redirect and "location" in r.headers:
                            url = urljoin(url, r.headers["location"])
                            self.check_url(url)
                            continue
                        if r.status_code >= 400:
                            raise SourceRefused(f"HTTP {r.status_code}")
                        ctype = r.headers.get("content-type", "").lower()
                        is_playlist = "mpegurl" in ctype or re.search(r"\.m3u8?($|\?)", urlsplit(url).path + "?")
                        if not is_playlist:
                            return url
                        body = b""
                        for chunk in r.iter_bytes():
                            body += chunk
                            if len(body) > 1 << 20:
                                raise SourceRefused("playlist larger than 1 MB")
                except httpx.HTTPError as exc:
                    raise SourceRefused(f"cannot fetch ({type(exc).__name__})") from None
                self._check_playlist(url, body.decode("utf-8", "replace"), hops - 1)
                return url
        raise SourceRefused("too many redirects")

    def _check_playlist(self, base: str, text: str, hops: int) -> None:
        if not text.lstrip().startswith("#EXTM3U"):
            return
        uris = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
        uris += re.findall(r'URI="([^"]+)"', text)
        variants = set()
        for uri in uris:
            target = urljoin(base, uri)
            self.check_url(target)
            if re.search(r"\.m3u8?$", urlsplit(target).path):
                variants.add(target)
        if variants and hops < 0:
            raise SourceRefused("playlists nested too deep")
        for target in sorted(variants)[:8]:
            self._follow(target, hops)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


def ffmpeg_protocols(uri: str) -> str | None:
    """FFmpeg's `protocol_whitelist` for a network source (None for files and devices)."""
    return FFMPEG_PROTOCOLS.get(urlsplit(uri).scheme.lower()) if "://" in uri else None


def redact_url(uri: str) -> str:
    """`uri` without userinfo and with token-like query parameters masked; non-URLs come back unchanged."""
    if "://" not in uri:
        return uri
    try:
        parts = urlsplit(uri)
        netloc = parts.netloc
        if "@" in netloc:
            netloc = "***@" + netloc.rsplit("@", 1)[1]
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            query = urlencode([(k, "***" if SECRET_PARAMS.search(k) else v) for k, v in pairs], safe="*/:")
        return urlunsplit((parts.scheme, netloc, parts.path, query, "***" if parts.fragment else ""))
    except ValueError:
        return re.sub(r"//[^/@]*@", "//***@", uri.split("?")[0])


def scrub(text: str, uri: str) -> str:
    """`text` (an error message) with the raw `uri` and its userinfo replaced by the redacted form."""
    if "://" not in uri:
        return text
    text = text.replace(uri, redact_url(uri))
    try:
        userinfo = urlsplit(uri).netloc.rpartition("@")[0]
    except ValueError:
        return text
    return text.replace(userinfo, "***") if userinfo else text


URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def redact_text(text: str | None) -> str | None:
    """Every URL inside `text` (an error message, a log line) redacted."""
    return URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), text) if text else text
