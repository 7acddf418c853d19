"""The review feed's REST routes: in process over a real SQLite store (filters, paging, marking reviewed,
thumbnails, 404 and 422, the API key), then a real `foresight serve` on loopback whose uploaded clip's cards
come back with their thumbnails."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest
from fastapi.testclient import TestClient
from PIL import Image

from app.api import create_app
from app.services.settings import Settings
from pipelines.sinks.review import Card, notable, thumbnail
from pipelines.sinks.store import Store
from tests.helpers.api_server import ApiServer, wait_job
from tests.helpers.cli import free_port

KEY = "review-key"


def picture(width: int = 640, height: int = 360) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (20, 120, 220)).save(out, format="JPEG")
    return out.getvalue()


@pytest.fixture
def api(tmp_path):
    settings = Settings(db_path=tmp_path / "r.db", api_key=KEY)
    app = create_app(settings)  # no lifespan: a real store, nothing else starts
    store = Store(settings.db_path)
    app.state.services = SimpleNamespace(settings=settings, store=store, metrics=SimpleNamespace(
        requests=SimpleNamespace(labels=lambda *a: SimpleNamespace(observe=lambda s: None)),
        server_errors=SimpleNamespace(inc=lambda: None)))
    client = TestClient(app, raise_server_exceptions=False, headers={"X-API-Key": KEY})
    client.base_url = "http://127.0.0.1"
    cards = [Card("j1", "rtsp://cam-a", "alert", "fire", "Leave the building", "a smoke alarm sounds", 10.0, 100.0,
                  severity="critical", thumbnail=thumbnail(picture())),
             Card("j1", "rtsp://cam-a", "watch", "a dog barks", "a dog barks", "matched", 20.0, 110.0),
             Card("j2", "rtsp://cam-b", "crossing", "gate|person|a_to_b", "person crossed gate", "#1", 5.0, 120.0)]
    for card in cards:
        store.add_or_merge_card(card)
    store.add_or_merge_card(Card("j1", "rtsp://cam-a", "alert", "fire", "Leave the building", "again", 40.0, 130.0))
    yield client, store, cards
    store.close()


def test_list_filters_and_pages(api):
    client, _, cards = api
    page = client.get("/v1/review").json()
    assert page["total"] == 3 and [c["kind"] for c in page["cards"]] == ["crossing", "watch", "alert"]
    fire = page["cards"][2]
    assert fire["count"] == 2 and fire["time"] == 10.0 and fire["last_time"] == 40.0 and not fire["reviewed"]
    assert fire["thumbnail_url"] == f"/v1/review/{cards[0].id}/thumbnail" and fire["severity"] == "critical"
    assert fire["clip_url"] == "/v1/jobs/j1/clip?start=7.000&end=20.000"
    assert page["cards"][1]["thumbnail_url"] is None
    assert [c["kind"] for c in client.get("/v1/review", params={"kind": "watch"}).json()["cards"]] == ["watch"]
    assert [c["job_id"] for c in client.get("/v1/review", params={"source": "rtsp://cam-b"}).json()["cards"]] == ["j2"]
    assert client.get("/v1/review", params={"job_id": "j1"}).json()["total"] == 2
    second = client.get("/v1/review", params={"limit": 1, "offset": 1}).json()
    assert second["total"] == 3 and [c["kind"] for c in second["cards"]] == ["watch"]
    assert client.get("/v1/review", params={"reviewed": "true"}).json()["cards"] == []


def test_mark_reviewed_and_back(api):
    client, _, cards = api
    r = client.patch(f"/v1/review/{cards[1].id}", json={"reviewed": True})
    assert r.status_code == 200 and r.json()["reviewed"] and r.json()["reviewed_at"] > 0
    assert [c["id"] for c in client.get("/v1/review?reviewed=true").json()["cards"]] == [cards[1].id]
    assert cards[1].id not in [c["id"] for c in client.get("/v1/review?reviewed=false").json()["cards"]]
    assert client.get(f"/v1/review/{cards[1].id}").json()["reviewed"]
    assert not client.patch(f"/v1/review/{cards[1].id}", json={"reviewed": False}).json()["reviewed"]


def test_thumbnail_is_a_jpeg(api):
    client, _, cards = api
    r = client.get(f"/v1/review/{cards[0].id}/thumbnail")
    assert r.status_code == 200 and r.headers["content-type"] == "image/jpeg"
    assert Image.open(io.BytesIO(r.content)).size == (320, 180)
    assert client.get(f"/v1/review/{cards[1].id}/thumbnail").status_code == 404  # a card without a picture


@pytest.mark.parametrize("method, path, body", [
    ("get", "/v1/review/999", None), ("patch", "/v1/review/999", {"reviewed": True}),
    ("get", "/v1/review/999/thumbnail", None), ("get", f"/v1/review/{2**63 - 1}", None)])
def test_unknown_cards_are_404(api, method, path, body):
    r = getattr(api[0], method)(path, **({"json": body} if body is not None else {}))
    assert r.status_code == 404 and r.json() == {"detail": "no such card"}


@pytest.mark.parametrize("method, path, body", [
    ("get", "/v1/review?kind=sofa", None), ("get", "/v1/review?reviewed=maybe", None),
    ("get", "/v1/review?limit=0", None), ("get", "/v1/review?limit=501", None), ("get", "/v1/review?offset=-1", None),
    ("get", "/v1/review?source=", None), ("get", "/v1/review?source=a%01b", None), ("get", "/v1/review/abc", None),
    ("get", "/v1/review/0", None), ("get", f"/v1/review/{2**63}", None), ("patch", "/v1/review/1", {}),
    ("patch", "/v1/review/1", {"reviewed": "perhaps"}), ("patch", "/v1/review/1", {"reviewed": True, "x": 1})])
def test_bad_filters_and_bodies_are_422(api, method, path, body):
    r = getattr(api[0], method)(path, **({"json": body} if body is not None else {}))
    assert r.status_code == 422, r.text
    assert set(r.json()) == {"detail"}


def test_a_body_that_is_not_text_is_400(api):
    r = api[0].patch("/v1/review/1", content=b"\xff\xfe{\x06not utf-8", headers={"content-type": "application/json"})
    assert r.status_code == 400 and set(r.json()) == {"detail"}


def test_the_routes_need_the_key(api):
    client, _, cards = api
    for path in ("/v1/review", f"/v1/review/{cards[0].id}", f"/v1/review/{cards[0].id}/thumbnail"):
        assert client.get(path, headers={"X-API-Key": "wrong"}).status_code == 401
    assert client.patch(f"/v1/review/{cards[0].id}", json={"reviewed": True},
                        headers={"X-API-Key": "wrong"}).status_code == 401
    assert not client.get(f"/v1/review/{cards[0].id}").json()["reviewed"]


def test_the_routes_are_in_the_openapi_document(api):
    paths = api[0].get("/openapi.json").json()["paths"]
    assert set(paths["/v1/review"]) == {"get"} and set(paths["/v1/review/{card_id}"]) == {"get", "patch"}
    assert "image/jpeg" in paths["/v1/review/{card_id}/thumbnail"]["get"]["responses"]["200"]["content"]


@pytest.mark.slow
def test_an_uploaded_clips_cards_come_with_thumbnails(demo_clip, tmp_path):
    """The demo clip's alarm-like ring is an event of note (YAMNet hears "Alarm"): a real server makes its card
    while the job runs, with the analysed picture of that second as thumbnail."""
    server = ApiServer(tmp_path / "f.db", free_port(), "--max-duration", "120", api_key=KEY)
    try:
        server.wait_ready()
        with server.client() as c:
            files = {"file": ("demo.mp4", demo_clip[0].read_bytes(), "video/mp4")}
            job_id = c.post("/v1/analyze", files=files).json()["job_id"]
            assert wait_job(c, job_id)["status"] == "done"
            result = c.get(f"/v1/jobs/{job_id}/result").json()
            page = c.get("/v1/review", params={"job_id": job_id}).json()
            kinds = sorted(card["kind"] for card in page["cards"])
            thumbs = [c.get(card["thumbnail_url"]) for card in page["cards"] if card["thumbnail_url"]]
            first = page["cards"][0] if page["cards"] else None
            marked = c.patch(f"/v1/review/{first['id']}", json={"reviewed": True}).json() if first else None
            reviewed = c.get("/v1/review", params={"job_id": job_id, "reviewed": "true"}).json()
    finally:
        server.stop()
    expected = [e for e in result["events"] if notable(e)]
    assert expected, result["events"]  # the ring is heard as an alarm
    assert kinds.count("event") >= 1 and kinds.count("alert") >= (1 if result["alerts"] else 0), (kinds, result)
    assert page["total"] == len(page["cards"]) and {card["source"] for card in page["cards"]} == {"demo.mp4"}
    assert thumbs and all(t.headers["content-type"] == "image/jpeg" for t in thumbs)
    assert all(Image.open(io.BytesIO(t.content)).size == (320, 180) for t in thumbs)
    assert marked["reviewed"] and [card["id"] for card in reviewed["cards"]] == [first["id"]]
