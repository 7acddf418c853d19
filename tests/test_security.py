"""Security guards, in process and on loopback only: the source policy (SSRF) for streams and webhooks, URL
redaction, bounded metrics, and no 5xx or echoed input on bad requests.

Every network target here is 127.0.0.x or `localhost`; servers started here stop by themselves."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from fastapi.testclient import TestClient
from prometheus_client import generate_latest

from app.api import create_app
from app.api.metrics import Metrics
from app.services.settings import Settings
from app.services.streams import StreamManager
from pipelines.media.policy import GENERIC_REFUSAL, SourcePolicy, SourceRefused
from pipelines.media.redact import redact
from pipelines.sinks.webhooks import WebhookConfig, WebhookSender
from tests.helpers.web import QuietHandler, serve

KEY = "k-123"
LOOPBACK_ONLY = SourcePolicy(networks=("127.0.0.1/32",), allow_public=False)


class RecordingStore:
    """Stands in for the SQLite store: remembers every call (a refused source must cause none)."""

    def __init__(self):
        self.calls = []

    def unfinished_job_ids(self, kind):
        return []

    def persistent_streams(self, kind):
        return []

    def __getattr__(self, name):
        return lambda *a, **kw: self.calls.append(name)


@pytest.fixture
def app_client(tmp_path):
    def make(**settings_kw):
        settings = Settings(db_path=tmp_path / "f.db", api_key=KEY, **settings_kw)
        app = create_app(settings)  # no lifespan: services are stand-ins, nothing starts Ray
        jobs = SimpleNamespace(depth=lambda: (0, 0), max_queue=4, finished={})
        store = RecordingStore()
        streams = StreamManager(store, str(tmp_path / "f.db"), settings.options, 2, policy=settings.source_policy)
        app.state.services = SimpleNamespace(settings=settings, store=store, jobs=jobs, streams=streams,
                                             metrics=Metrics(jobs, streams), search=None)

        @app.get("/boom", include_in_schema=False)
        def boom():
            raise RuntimeError("boom")

        client = TestClient(app, raise_server_exceptions=False, headers={"X-API-Key": KEY})
        client.base_url = "http://127.0.0.1"
        return client, app.state.services
    return make


# -- 1. the source policy ----------------------------------------------------------------------------------

REFUSED_SOURCES = [
    "rtsp://127.0.0.1:8554/cam", "http://localhost:8000/v1/jobs", "http://[::1]/", "http://169.254.169.254/latest",
    "http://[fd00:ec2::254]/", "http://0.0.0.0:8000/", "http://[::ffff:127.0.0.1]/", "http://169.254.1.1/",
    "rtsp://127.1/x", "http://2130706433/", "/etc/passwd", "/etc", "/no/such/file.mp4", "file:///etc/passwd",
    "ftp://192.168.1.2/x.mp4", "gopher://10.0.0.1/", "/dev/video0",
]


@pytest.mark.parametrize("source", REFUSED_SOURCES)
def test_default_policy_refuses_loopback_metadata_and_paths_with_one_message(source):
    with pytest.raises(SourceRefused) as err:
        SourcePolicy().check_source_quick(source)
    assert str(err.value) == GENERIC_REFUSAL


def test_host_names_outside_the_list_are_refused_before_any_lookup(monkeypatch):
    import socket

    def no_dns(*args, **kw):
        raise AssertionError("resolved a name the host list refuses")

    policy = SourcePolicy(hosts=("localhost", "cam*.lan"), networks=("127.0.0.0/8",))
    policy.check_source_quick("rtsp://localhost:8554/x")
    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    for source in ("http://no-such-host.invalid/x.m3u8", "rtsp://example.org/x", "http://evil.lan/"):
        with pytest.raises(SourceRefused):
            policy.check_source_quick(source)


def test_default_policy_admits_camera_lans_and_public_addresses():
    policy = SourcePolicy()
    for address in ("192.168.1.20", "10.1.2.3", "172.20.0.5", "100.64.1.1", "fd12::1", "8.8.8.8"):
        assert policy.address_allowed(address), address
    for address in ("127.0.0.1", "::1", "169.254.169.254", "fd00:ec2::254", "0.0.0.0", "::", "224.0.0.1",
                    "fe80::1", "::ffff:127.0.0.1"):
        assert not policy.address_allowed(address), address
    policy.check_source_quick("rtsp://admin:pw@192.168.1.20:554/stream1")  # literal address: no DNS, no traffic
    assert not SourcePolicy(allow_public=False).address_allowed("8.8.8.8")


@pytest.fixture
def web():
    """An HTTP server on 127.0.0.1 whose paths answer with canned responses (redirects, playlists)."""
    routes: dict[str, tuple[int, dict, bytes]] = {}
    hits: list[str] = []

    class Handler(QuietHandler):
        def do_GET(self):  # noqa: N802
            hits.append(self.path)
            status, headers, body = routes.get(self.path, (404, {}, b""))
            self.reply(status, body, **headers)

    server = serve("127.0.0.1", Handler)
    yield f"http://127.0.0.1:{server.server_address[1]}", routes, hits
    server.shutdown()


M3U = "application/vnd.apple.mpegurl"


def test_every_redirect_and_playlist_hop_is_checked(web):
    base, routes, hits = web
    port = base.rsplit(":", 1)[1]
    routes["/redirect"] = (302, {"Location": f"http://127.0.0.2:{port}/x.mp4"}, b"")
    routes["/ok.m3u8"] = (200, {"Content-Type": M3U}, b"#EXTM3U\n#EXTINF:1,\nseg0.ts\n")
    routes["/evil.m3u8"] = (200, {"Content-Type": M3U},
                            f"#EXTM3U\n#EXTINF:1,\nseg0.ts\n#EXTINF:1,\nhttp://127.0.0.3:{port}/s.ts\n".encode())
    routes["/master.m3u8"] = (200, {"Content-Type": M3U}, b"#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nevil.m3u8\n")
    routes["/key.m3u8"] = (200, {"Content-Type": M3U},
                           b'#EXTM3U\n#EXT-X-KEY:METHOD=AES-128,URI="http://169.254.169.254/k"\nseg0.ts\n')
    routes["/hop"] = (302, {"Location": "/ok.m3u8"}, b"")
    assert LOOPBACK_ONLY.check_source(base + "/ok.m3u8") == base + "/ok.m3u8"
    assert LOOPBACK_ONLY.check_source(base + "/hop") == base + "/ok.m3u8"
    for path in ("/redirect", "/evil.m3u8", "/master.m3u8", "/key.m3u8", "/missing.m3u8"):
        with pytest.raises(SourceRefused) as err:
            LOOPBACK_ONLY.check_source(base + path)
        assert str(err.value) == GENERIC_REFUSAL, path
    assert not any(h.startswith("/s.ts") or h == "/x.mp4" for h in hits)


def test_webhook_targets_obey_the_policy(web):
    base, routes, hits = web
    sender = WebhookSender(WebhookConfig(url=base + "/hook", policy=SourcePolicy(), retries=0), "cam")
    sender._queue.put({"alerts": [1]})
    counts = sender.close()
    assert counts["failed"] == 1 and counts["sent"] == 0 and "policy" in counts["last_error"] and hits == []


def test_refused_stream_source_is_400_with_one_message_and_no_rows(app_client):
    client, svc = app_client()
    details = set()
    for source in REFUSED_SOURCES:
        r = client.post("/v1/streams", json={"source": source})
        assert r.status_code == 400, (source, r.text)
        details.add(r.json()["detail"])
    assert details == {GENERIC_REFUSAL}
    assert svc.store.calls == [] and svc.streams.list() == []


# -- 2. credentials and metrics -----------------------------------------------------------------------------

def test_redact_url_hides_userinfo_and_token_parameters():
    url = "rtsp://admin:pw@cam.local:554/live?channel=1&token=abc&apikey=k1&X-Amz-Signature=s1&auth=a1#frag"
    red = redact(url)
    assert "pw" not in red and "admin" not in red and all(s not in red for s in ("abc", "k1", "s1", "a1", "frag"))
    assert red.startswith("rtsp://***@cam.local:554/live?channel=1&token=***")
    assert redact("/data/clip.mp4") == "/data/clip.mp4"
    from pipelines.media.sources import parse_source

    assert "pw" not in parse_source("rtsp://u:pw@10.0.0.2/x").name
    from pipelines.media.ingest_stats import IngestStats

    stats = IngestStats(last_error="Connection refused: 'rtsp://u:pw@10.0.0.2/x?token=t0k'",
                        failure="http://a:pw@h/x?sig=t0k: 404", warnings=["rtsp://u:pw@h/x failed"])
    assert "pw" not in str(stats.to_dict()) and "t0k" not in str(stats.to_dict())


def test_metric_labels_are_bounded_and_500s_counted(app_client):
    client, svc = app_client()
    for i in range(40):
        client.request(f"M{i}X", "/healthz")
        client.get(f"/nowhere/{i}")
    assert client.get("/boom").status_code == 500
    text = generate_latest(svc.metrics.registry).decode()
    assert "M1X" not in text and "nowhere" not in text and 'method="other"' in text and 'route="other"' in text
    assert "foresight_http_server_errors_total 1.0" in text


def test_metrics_can_require_the_key(app_client):
    client, _ = app_client(metrics_need_key=True)
    assert client.get("/metrics").status_code == 200
    assert client.get("/metrics", headers={"X-API-Key": ""}).status_code == 401
    open_client, _ = app_client()
    assert open_client.get("/metrics", headers={"X-API-Key": ""}).status_code == 200


# -- 3. no 5xx and no echo on bad input ---------------------------------------------------------------------

def _raw(client, path, body: str):
    return client.post(path, content=body.encode("utf-8", "surrogatepass"),
                       headers={"content-type": "application/json"})


@pytest.mark.parametrize("path,body", [
    ("/v1/search", '{"query": "\\ud800"}'),
    ("/v1/search", '{"query": "phone", "job_ids": ["\\udfff"]}'),
    ("/v1/search", '{"query": "\\u001e"}'),
    ("/v1/search", '{"query": "ring\\u0000ing"}'),
    ("/v1/streams", '{"source": "rtsp://cam/\\ud800"}'),
    ("/v1/streams", '{"source": "rtsp://cam/\\u0007"}'),
])
def test_bad_strings_are_422_in_one_line_without_echo(app_client, path, body):
    client, _ = app_client()
    r = _raw(client, path, body)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail and "ud800" not in detail and "input" not in r.text


def test_large_json_is_413_and_long_ids_are_not_echoed(app_client):
    client, _ = app_client()
    big = '{"query": "x", "job_ids": [' + ",".join(['"' + "a" * 100 + '"'] * 20000) + "]}"
    assert _raw(client, "/v1/search", big).status_code == 413
    long_id = "z" * 60_000
    for path in (f"/v1/jobs/{long_id}", f"/v1/jobs/{long_id}/result", f"/v1/streams/{long_id}"):
        r = client.get(path)
        assert r.status_code == 404 and long_id[:50] not in r.text and len(r.text) < 200


def test_trusted_hosts_and_allow_header(app_client):
    client, _ = app_client(trusted_hosts=("127.0.0.1", "localhost"))
    r = client.get("/healthz", headers={"Host": "attacker.example"})
    assert r.status_code == 400 and r.json() == {"detail": "invalid Host header"}
    assert client.get("/metrics", headers={"Host": "localhost:8000"}).status_code == 200
    r = client.options("/v1/streams/abc")
    assert r.status_code == 204 and {"GET", "DELETE"} <= set(r.headers["allow"].replace(" ", "").split(","))
    r = client.put("/v1/streams/abc")
    assert r.status_code == 405 and "DELETE" in r.headers["allow"]


def test_head_works_wherever_get_does(app_client):
    client, _ = app_client()
    for path in ("/healthz", "/metrics", "/openapi.json"):
        get, head = client.get(path), client.head(path)
        assert head.status_code == get.status_code == 200, path
        assert head.content == b"" and head.headers["content-type"] == get.headers["content-type"]
    assert client.head("/v1/streams/abc").status_code == client.get("/v1/streams/abc").status_code == 404
    assert client.head("/healthz", headers={"X-API-Key": "wrong"}).status_code == 200
    assert client.head("/v1/streams/abc", headers={"X-API-Key": "wrong"}).status_code == 401



def _upload_request(messages: list[dict | None]):
    import asyncio

    from starlette.requests import Request

    async def receive():
        message = messages.pop(0) if messages else None
        if message is None:  # a client that stops sending
            await asyncio.sleep(3600)
        return message

    headers = [(b"content-type", b"multipart/form-data; boundary=xyz")]
    return Request({"type": "http", "method": "POST", "path": "/v1/analyze", "headers": headers}, receive)


@pytest.mark.parametrize("messages,status", [
    ([{"type": "http.request", "body": b"--xyz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.mp4\"\r\n"
      b"\r\nhalf a clip", "more_body": True}, {"type": "http.disconnect"}], 400),
    ([{"type": "http.request", "body": b"--xyz\r\n", "more_body": True}, None], 408),
])
def test_disconnected_or_stalled_upload_is_a_quiet_4xx(tmp_path, caplog, messages, status):
    import asyncio
    import logging

    from app.api.multipart import receive_upload
    from app.services.uploads import UploadRejected

    with caplog.at_level(logging.INFO), pytest.raises(UploadRejected) as err:
        asyncio.run(receive_upload(_upload_request(messages), tmp_path / "u", 10_000, ("video/mp4",), timeout_s=0.3))
    assert err.value.status == status
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_server_webhooks_get_the_source_policy(tmp_path):
    from pipelines import AnalyzeOptions

    options = AnalyzeOptions(webhook=WebhookConfig(url="http://127.0.0.1:9/hook"))
    settings = Settings(db_path=tmp_path / "f.db", options=options)
    assert settings.options.webhook.policy is settings.source_policy
    with pytest.raises(SourceRefused):
        settings.options.webhook.policy.check_url(settings.options.webhook.url)


# -- issue 33: IPv6 forms that embed IPv4, and what `hosts` means ---------------------------------------------

def test_ipv6_forms_that_embed_a_refused_ipv4_address_are_refused():
    policy = SourcePolicy()  # the default: camera LANs and public addresses, never loopback or metadata
    embedded = {
        "::7f00:1": "IPv4-compatible 127.0.0.1", "::127.0.0.1": "IPv4-compatible", "::ffff:7f00:1": "mapped",
        "::ffff:0:7f00:1": "translated (RFC 2765)", "64:ff9b::7f00:1": "NAT64 /96", "64:ff9b::a9fe:a9fe": "NAT64 metadata",
        "64:ff9b:1:7f00:1:: ": "NAT64 local-use /48", "64:ff9b:1::7f00:1": "NAT64 local-use /96",
        "2002:7f00:1::1": "6to4 of 127.0.0.1", "2002:a9fe:a9fe::1": "6to4 of the metadata address",
        "2002:a9fe:1::": "6to4 of link-local", "2001:0:4136:e378:8000:63bf:80ff:fffe": "Teredo of 127.0.0.1",
        "::a00:1": "IPv4-compatible 10.0.0.1 (allowed)",
    }
    for address, what in embedded.items():
        allowed = policy.address_allowed(address.strip())
        assert allowed == what.endswith("(allowed)"), (address, what)
    for url in ("rtsp://[::7f00:1]:554/x", "http://[64:ff9b::127.0.0.1]/", "http://[2002:7f00:1::1]/"):
        with pytest.raises(SourceRefused):
            policy.check_source_quick(url)
    assert policy.address_allowed("64:ff9b::808:808")  # NAT64 of a public address: public like 8.8.8.8
    assert not SourcePolicy(allow_public=False).address_allowed("64:ff9b::808:808")


def test_a_host_list_refuses_ip_literals_that_are_not_on_it(monkeypatch):
    import socket

    def literals_only(host, *args, **kw):  # an IP literal "resolves" to itself; no name is looked up
        import ipaddress

        ip = ipaddress.ip_address(host)
        return [(socket.AF_INET6 if ip.version == 6 else socket.AF_INET, socket.SOCK_STREAM, 6, "", (host, 0))]

    monkeypatch.setattr(socket, "getaddrinfo", literals_only)
    policy = SourcePolicy(hosts=("localhost",))
    for url in ("http://8.8.8.8/", "rtsp://10.0.0.1/x", "http://[2001:4860:4860::8888]/", "http://127.0.0.1/"):
        with pytest.raises(SourceRefused):
            policy.check_source_quick(url)
    listed = SourcePolicy(hosts=("127.0.0.1", "::1"), networks=("127.0.0.0/8", "::1/128"), allow_public=False)
    listed.check_source_quick("http://127.0.0.1:9/")
    listed.check_source_quick("http://[0:0::1]:9/")  # compared in normal form
