"""The suite's loopback fence (tests/helpers/loopback_guard.py, issue 33) is on and holds: a test that trusts a
policy (e.g. `SourcePolicy(hosts=("localhost",))`, which on 8fd174f still let `http://8.8.8.8/` through) can never
send traffic off the machine. Every refusal below happens before a packet is sent."""

from __future__ import annotations

import socket

import pytest

from tests.helpers import loopback_guard

OUTSIDE = ("192.0.2.1", 80)  # TEST-NET-1: never reached, the guard refuses first


def test_the_guard_is_installed_for_the_whole_session():
    assert loopback_guard.installed()


def test_connections_outside_loopback_are_refused_before_any_packet():
    assert loopback_guard.installed()  # (on code without the guard, stop here rather than send anything)
    with pytest.raises(PermissionError, match="loopback"):
        socket.create_connection(OUTSIDE, timeout=1)
    with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s, pytest.raises(PermissionError):
        s.connect(("::ffff:192.0.2.1", 80, 0, 0))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        with pytest.raises(PermissionError):
            s.sendto(b"x", OUTSIDE)
        with pytest.raises(PermissionError):
            s.connect_ex(("8.8.8.8", 53))
    with pytest.raises(socket.gaierror):
        socket.getaddrinfo("example.org", 80)  # no query leaves for the DNS server


def test_loopback_still_works():
    assert loopback_guard.installed()
    with socket.create_server(("127.0.0.1", 0)) as server:
        with socket.create_connection(server.getsockname(), timeout=5) as client:
            peer, _ = server.accept()
            client.sendall(b"hi")
            assert peer.recv(2) == b"hi"
            peer.close()
    assert socket.getaddrinfo("localhost", 80)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(b"x", ("127.0.0.1", 9))


def test_a_policy_the_tests_trust_cannot_send_traffic_out():
    from models.errors import BadInput
    from pipelines.media.policy import SourcePolicy
    from pipelines.media.sources import open_container, parse_source

    assert loopback_guard.installed()
    spec = parse_source("http://8.8.8.8/x.mp4", guard=SourcePolicy(hosts=("localhost",)))
    with pytest.raises(BadInput, match="source refused"):
        open_container(spec, 2, 2)
