"""The one redaction function (`pipelines.media.redact.redact`, issue 33): property tests over generated URLs
and texts (a generated secret never comes out, the rest does), then the places that show a source: the real
SQLite store's rows and the log, and uvicorn's access log."""

from __future__ import annotations

import logging

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.media.redact import is_secret_name, redact

# Secrets are upper case and digits; everything that must survive is lower case, so one cannot hide the other.
SECRET = st.text("ABCDEFGHJKLMNPQRSTUVWXYZ23456789", min_size=8, max_size=16)
LOWER = st.text("abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=8)
SECRET_BASES = ("pass", "password", "pw", "p", "psw", "pwd", "loginpass", "passwd", "token", "tok", "access_token",
                "api_key", "apikey", "key", "secret", "code", "auth", "sig", "signature", "session", "x-amz-signature",
                "auth_token", "sessionid", "otp", "pin")
PLAIN_NAMES = ("channel", "subtype", "stream", "fps", "res", "profile", "width", "codec", "unicast", "proto")


@st.composite
def secret_name(draw) -> str:
    name = draw(st.sampled_from(SECRET_BASES))
    name = "".join(c.upper() if draw(st.booleans()) else c for c in name)  # any case
    if draw(st.integers(0, 4)) == 0 and name[0].lower() not in "abcdef":  # percent-encode the first letter
        name = f"%{ord(name[0]):02X}{name[1:]}"
    return name


@st.composite
def url_with_secrets(draw) -> tuple[str, list[str], list[str]]:
    """A URL, the secrets in it, and the parts that must survive."""
    secrets, keep = [], []
    scheme = draw(st.sampled_from(("rtsp", "rtsps", "http", "https")))
    host = draw(LOWER) + draw(st.sampled_from((".lan", ".example", "")))
    keep.append(host)
    netloc = host + draw(st.sampled_from(("", ":554", ":8080")))
    if draw(st.booleans()):  # user:password@, the password with spaces, @ or percent-encoding
        password = draw(SECRET) + draw(st.sampled_from(("", " WITH SPACE", "@AT", "%40PCT", ":COLON")))
        netloc = f"{draw(LOWER)}:{password}@{netloc}"
        secrets.append(password)
    path = "/" + draw(LOWER)
    keep.append(path)
    for _ in range(draw(st.integers(0, 2))):  # matrix parameters
        value = draw(SECRET)
        path += f";{draw(secret_name())}={value}"
        secrets.append(value)
    params = []
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            value = draw(SECRET)
            params.append(f"{draw(secret_name())}={value}")
            secrets.append(value)
        else:
            param = f"{draw(st.sampled_from(PLAIN_NAMES))}={draw(LOWER)}"
            params.append(param)
            keep.append(param)
    query = params[0] + "".join(draw(st.sampled_from("&;")) + p for p in params[1:])
    return f"{scheme}://{netloc}{path}?{query}", secrets, keep


def pieces(secret: str) -> list[str]:
    """The secret and each of its parts long enough to recognise."""
    return [secret, *(p for p in secret.replace("@", " ").replace(":", " ").replace("%40", " ").split()
                      if len(p) >= 4)]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(url_with_secrets())
def test_a_generated_secret_never_survives_in_a_url(case):
    url, secrets, keep = case
    out = redact(url)
    for secret in secrets:
        assert all(p not in out for p in pieces(secret)), (url, out)
    for part in keep:
        assert part in out, (url, out, part)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(url_with_secrets(), LOWER, LOWER, secret_name(), SECRET)
def test_a_generated_secret_never_survives_in_a_log_line(case, before, after, bare_name, bare_secret):
    url, secrets, keep = case
    text = f"{before}: cannot open {url}: {after} ({bare_name}={bare_secret} refused)"
    out = redact(text)
    for secret in (*secrets, bare_secret):
        assert all(p not in out for p in pieces(secret)), (text, out)
    assert out.startswith(f"{before}: cannot open ") and f" {after} (" in out
    assert all(part in out for part in keep if "@" not in url), (text, out)


@settings(max_examples=200, deadline=None)
@given(url_with_secrets(), LOWER)
def test_secrets_of_a_known_url_are_masked_out_of_url_form(case, word):
    url, secrets, _ = case
    text = " ".join(f"{word} {s}" for s in secrets) + f" {word}"  # e.g. FFmpeg quoting only the password
    out = redact(text, url)
    assert all(s not in out for s in secrets), (text, out)
    assert out.count(word) == len(secrets) + 1


def test_the_names_the_issue_lists_are_credentials_and_ordinary_ones_are_not():
    for name in ("pass", "PW", "p", "psw", "loginpass", "tok", "code", "Api_Key", "pa%73s", "X-Amz-Signature"):
        assert is_secret_name(name), name
    for name in PLAIN_NAMES:
        assert not is_secret_name(name), name


def test_header_forms_and_edge_cases():
    assert redact("Authorization: Bearer abc.def") == "Authorization: ***"
    assert redact("X-API-Key: k123") == "X-API-Key: ***"
    assert redact("rtsp://cam/live;password=s3;x=1") == "rtsp://cam/live;password=***;x=1"
    assert redact("rtsp://u:my pass@cam/x failed") == "rtsp://***@cam/x failed"
    assert redact("http://h/a?next=/b?token=t9") == "http://h/a?next=/b?token=***"
    assert redact("/data/clip.mp4") == "/data/clip.mp4" and redact(None) is None and redact("") == ""


# -- where sources are shown -----------------------------------------------------------------------------------

SECRETS = ("Hunter Two", "Hunter%20Two", "MATRIXSECRET", "PASSSECRET", "TOKSECRET", "CODESECRET", "PSWSECRET")
LEAKY = ("rtsp://admin:Hunter%20Two@127.0.0.1:9/live;pw=MATRIXSECRET?ch=1&pass=PASSSECRET&tok=TOKSECRET"
         ";code=CODESECRET&psw=PSWSECRET")


def test_no_secret_reaches_the_store_or_the_log(tmp_path, caplog):
    """A stream that fails (refused port): every row of the real SQLite store, and the log, stay clean."""
    import sqlite3

    from app.services.streams import StreamManager
    from pipelines import AnalyzeOptions
    from pipelines.sinks.store import Store

    caplog.set_level(logging.DEBUG)
    store = Store(tmp_path / "f.db")
    manager = StreamManager(store, str(store.path), AnalyzeOptions(), 2)  # no policy: reasons are shown in full
    stream = manager.add(LEAKY)
    stream.watcher.join(60)
    assert stream.status == "failed" and "127.0.0.1:9/live" in stream.source and "ch=1" in stream.source
    with sqlite3.connect(store.path) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        rows = [repr(row) for t in tables for row in db.execute(f"SELECT * FROM {t}")]  # noqa: S608
    assert any("127.0.0.1:9/live" in r for r in rows)  # the source was written, redacted
    shown = " ".join([*rows, caplog.text, stream.source, stream.error or ""])
    assert [s for s in SECRETS if s in shown] == []


def test_the_access_log_never_shows_a_key_sent_in_the_query():
    """A real uvicorn on loopback with uvicorn's own logging set-up, and the filter `create_app` installs."""
    import threading
    import time

    import httpx
    import uvicorn
    from fastapi import FastAPI

    from app.api import access_log
    from tests.helpers.cli import free_port

    app = FastAPI()
    app.get("/v1/jobs")(lambda: {"jobs": []})
    access_log.install()
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="info", access_log=True))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            lines.append(self.format(record))

    keep = Keep()
    try:
        deadline = time.time() + 20
        while not server.started and time.time() < deadline:
            time.sleep(0.05)
        logging.getLogger("uvicorn.access").addHandler(keep)  # after uvicorn's dictConfig
        httpx.get(f"http://127.0.0.1:{port}/v1/jobs?api_key=QUERYKEY99&limit=5&Token=T0KEN77", timeout=10)
        # httpx and requests percent-encode query values: the URLs in them hid their credentials from the filter
        httpx.get(f"http://127.0.0.1:{port}/v1/jobs", timeout=10,
                  params={"source": "rtsp://admin:PWD999x@cam/live", "other": "rtsp://cam/x?password=PWD555y"})
    finally:
        server.should_exit = True
        thread.join(20)
        logging.getLogger("uvicorn.access").removeHandler(keep)
    assert any("/v1/jobs?api_key=***" in line and "limit=5" in line for line in lines), lines
    assert len(lines) == 2 and "source=rtsp://***@cam/live" in lines[1], lines
    assert not any(s in line for line in lines for s in ("QUERYKEY99", "T0KEN77", "PWD999x", "PWD555y")), lines


def test_the_api_key_comes_from_a_file_or_the_environment(tmp_path, monkeypatch):
    from app.server import build_parser, serve_main
    from app.services.settings import Settings

    key_file = tmp_path / "key"
    key_file.write_text("s3cret-from-file\n")
    monkeypatch.delenv("FORESIGHT_API_KEY", raising=False)
    monkeypatch.delenv("FORESIGHT_API_KEY_FILE", raising=False)
    db = ["--db", str(tmp_path / "f.db")]
    assert Settings.from_args(build_parser().parse_args([*db, "--api-key-file", str(key_file)])).api_key == \
        "s3cret-from-file"
    monkeypatch.setenv("FORESIGHT_API_KEY_FILE", str(key_file))
    assert Settings.from_args(build_parser().parse_args(db)).api_key == "s3cret-from-file"
    monkeypatch.delenv("FORESIGHT_API_KEY_FILE")
    monkeypatch.setenv("FORESIGHT_API_KEY", "from-env")
    assert Settings.from_args(build_parser().parse_args(db)).api_key == "from-env"
    assert Settings.from_args(build_parser().parse_args([*db, "--api-key", "flag"])).api_key == "flag"
    assert serve_main([*db, "--api-key-file", str(tmp_path / "missing")]) == 2  # one line, before anything starts
    (tmp_path / "empty").write_text("\n")
    assert serve_main([*db, "--api-key-file", str(tmp_path / "empty")]) == 2
    assert "ps" in build_parser().format_help()  # --api-key says it is visible to other users
