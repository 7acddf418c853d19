"""Which network sources a server may open on a caller's behalf (SSRF guard).

`SourcePolicy` answers "may this URL be fetched?": the scheme must be allowed, and every address the host
resolves to must lie in an allowed network and in no denied one. It is checked after DNS resolution, on
every HTTP redirect (followed here, one hop at a time) and on every HLS playlist hop (variant playlists and
segment hosts are read and checked before FFmpeg sees the URL, and FFmpeg gets a protocol whitelist so a
playlist cannot point it at `file:` or another protocol). While FFmpeg reads, `guarded_io` checks every HTTP
URL it opens and `rtsp_guard` keeps RTSP on the checked address and refuses RTSP redirects. IPv6 addresses
that embed an IPv4 one are judged by that IPv4 address (`embedded_ipv4`). Local paths and devices are refused for API
callers. Refusals raise `SourceRefused`, whose message is deliberately the same for every reason, so an
API caller learns nothing about what exists on the server's networks or disk; the reason is kept in
`SourceRefused.reason` for the operator's log.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import re
import socket
import threading
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit, urlunsplit

GENERIC_REFUSAL = "source refused or unreachable"

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
    hosts: tuple[str, ...] = ()  # when set, every host must match one of these ("cam*.lan", "10.0.0.7"); others,
    # IP literals included, are refused before any DNS lookup

    def __post_init__(self) -> None:
        try:
            for n in (*self.networks, *self.denied):
                _net(n)
        except ValueError as exc:
            raise ValueError(f"source policy: not a network (CIDR): {exc}") from None
        object.__setattr__(self, "schemes", tuple(s.lower() for s in self.schemes))

    def address_allowed(self, address: str) -> bool:
        """An IPv6 address that embeds an IPv4 one (mapped, compatible, NAT64, 6to4, Teredo) is judged by every
        IPv4 address it may reach, so `[::7f00:1]` or `[64:ff9b::127.0.0.1]` is loopback like 127.0.0.1."""
        ip = ipaddress.ip_address(address.split("%")[0])
        if self._in(ip, self.denied):
            return False
        embedded = embedded_ipv4(ip)
        if embedded:
            return all(self._judge(v4) for v4 in embedded)
        return self._judge(ip)

    def _judge(self, ip) -> bool:
        if self._in(ip, self.denied):
            return False
        if self._in(ip, self.networks):
            return True
        return self.allow_public and ip.is_global and not ip.is_multicast

    @staticmethod
    def _in(ip, networks: tuple[str, ...]) -> bool:
        return any(ip in _net(n) for n in networks if _net(n).version == ip.version)

    def host_listed(self, host: str) -> bool:
        """`host` (a name or an IP literal, compared in its normal form) matches one of `hosts`."""
        host = _normal_host(host)
        return any(fnmatch.fnmatch(host, _normal_host(h)) for h in self.hosts)

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
        if self.hosts and not self.host_listed(host):
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


NAT64_WKP = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052 well-known prefix
NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215 local-use prefix (any RFC 6052 length)
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")  # deprecated ::a.b.c.d (::, ::1 excluded below)
IPV4_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")  # RFC 2765 ::ffff:0:a.b.c.d


def embedded_ipv4(ip) -> list[ipaddress.IPv4Address]:
    """Every IPv4 address an IPv6 address embeds (and may reach through a translator or tunnel); [] if none."""
    if ip.version == 4:
        return []
    n, low = int(ip), ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.ipv4_mapped is not None:
        return [ip.ipv4_mapped]
    if ip in IPV4_COMPATIBLE and n > 1:
        return [low]
    if ip in IPV4_TRANSLATED or ip in NAT64_WKP:
        return [low]
    if ip in NAT64_LOCAL:  # the /48 form puts the address in bits 48-63 and 72-87; longer prefixes further on
        packed = ip.packed
        return [low, ipaddress.IPv4Address(packed[6:8] + packed[9:11]),
                ipaddress.IPv4Address(packed[7:8] + packed[9:12]), ipaddress.IPv4Address(packed[9:13])]
    if ip.sixtofour is not None:
        return [ip.sixtofour]
    if ip.teredo is not None:
        return list(ip.teredo)
    return []


def _normal_host(host: str) -> str:
    host = host.strip().lower().strip("[]")
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host


def ffmpeg_protocols(uri: str) -> str | None:
    """FFmpeg's `protocol_whitelist` for a network source (None for files and devices)."""
    return FFMPEG_PROTOCOLS.get(urlsplit(uri).scheme.lower()) if "://" in uri else None
