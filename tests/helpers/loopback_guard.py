"""The test suite's own fence: no test may send traffic off the machine (issue 33), whatever a policy under
test would allow. Installed by tests/conftest.py for the whole pytest process: `socket.connect`,
`connect_ex` and `sendto` to an address outside loopback raise PermissionError before any packet leaves, and
`getaddrinfo` answers "no such name" for names other than localhost and this machine's own (so no query goes to
the DNS server either). It never resolves or contacts anything itself. Subprocesses a test starts are not
covered: they get loopback-only policies and URLs from the tests."""

from __future__ import annotations

import errno
import ipaddress
import socket

_REAL = {"connect": socket.socket.connect, "connect_ex": socket.socket.connect_ex, "sendto": socket.socket.sendto,
         "getaddrinfo": socket.getaddrinfo}
_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback", socket.gethostname().lower()}


def is_loopback(address) -> bool:
    """Whether a socket address (a tuple for AF_INET/AF_INET6; a path for AF_UNIX) stays on this machine."""
    if not isinstance(address, tuple):
        return True  # AF_UNIX paths, abstract sockets
    host = str(address[0]).split("%")[0].strip("[]")
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host.lower() in _LOCAL_NAMES or host.lower().endswith(".localhost")
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def _refuse(address) -> PermissionError:
    return PermissionError(errno.EACCES, f"tests may only reach loopback, not {address[0]!r}")


def _connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not is_loopback(address):
        raise _refuse(address)
    return _REAL["connect"](self, address)


def _connect_ex(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not is_loopback(address):
        raise _refuse(address)
    return _REAL["connect_ex"](self, address)


def _sendto(self, data, *args):
    address = args[-1] if args else None
    if self.family in (socket.AF_INET, socket.AF_INET6) and address is not None and not is_loopback(address):
        raise _refuse(address)
    return _REAL["sendto"](self, data, *args)


def _getaddrinfo(host, *args, **kw):
    name = host.decode() if isinstance(host, bytes) else host
    if name is not None and not is_loopback((name, 0)):
        try:
            ipaddress.ip_address(str(name).split("%")[0].strip("[]"))  # a literal: no lookup, the connect is fenced
        except ValueError:
            raise socket.gaierror(socket.EAI_NONAME, f"tests resolve no names outside loopback ({name!r})") from None
    return _REAL["getaddrinfo"](host, *args, **kw)


def install() -> None:
    socket.socket.connect = _connect
    socket.socket.connect_ex = _connect_ex
    socket.socket.sendto = _sendto
    socket.getaddrinfo = _getaddrinfo


def installed() -> bool:
    return socket.socket.connect is _connect and socket.getaddrinfo is _getaddrinfo
