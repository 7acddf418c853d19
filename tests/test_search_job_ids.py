"""`POST /v1/search` and its `job_ids`, against a real `foresight serve` on loopback holding two uploads of the
demo clip (analysed without speech recognition, indexed for the shipped grounder): ids match exactly, `[]` is a
422, and every grounded moment names the job whose clip it is in. Plus the store's side on real SQLite."""

from __future__ import annotations

import pytest

from pipelines.sinks.store import Store
from tests.helpers.api_server import ApiServer, wait_job
from tests.helpers.cli import free_port

QUERY = "a telephone is ringing"


@pytest.fixture(scope="module")
def served(tmp_path_factory, demo_clip):
    """The server and its two done jobs: {job id: the name it was uploaded under}."""
    folder = tmp_path_factory.mktemp("search")
    server = ApiServer(folder / "f.db", free_port(), "--no-asr", "--parallel", "1")
    try:
        server.wait_ready()
        data = demo_clip[0].read_bytes()
        with server.client() as c:
            ids = [c.post("/v1/analyze", files={"file": (name, data, "video/mp4")}).json()["job_id"]
                   for name in ("front.mp4", "back.mp4")]
            jobs = [wait_job(c, job_id) for job_id in ids]
        assert [j["status"] for j in jobs] == ["done", "done"], (jobs, server.tail())
        yield server, {j["job_id"]: j["source"] for j in jobs}
    finally:
        server.stop()


def search(server: ApiServer, **body) -> dict:
    with server.client() as c:
        r = c.post("/v1/search", json={"query": QUERY, "top_k": 20, **body})
    assert r.status_code == 200, r.text
    return r.json()


def grounded(body: dict) -> list[dict]:
    return [m for m in body["moments"] if m["method"] == "trisense"]


def test_every_grounded_moment_names_the_job_its_clip_came_from(served):
    server, names = served
    body = search(server)
    assert body["method"] == "text-match+trisense" and body["trisense"]["found"], body
    hits = grounded(body)
    assert {m["job_id"] for m in hits} == set(names), hits  # both clips answer; none is null
    for m in hits:
        assert m["source"] == f"{names[m['job_id']]}#{m['job_id'][:8]}", m


def test_job_ids_restrict_both_methods_to_exactly_those_jobs(served):
    server, names = served
    for job_id in names:
        body = search(server, job_ids=[job_id, "no-such-job"])
        assert grounded(body) and body["moments"], body
        assert {m["job_id"] for m in body["moments"]} == {job_id}, body


def test_an_unknown_id_matches_nothing_even_with_a_real_jobs_first_characters(served):
    server, names = served
    for job_id in names:
        body = search(server, job_ids=[job_id[:8] + "-not-a-job"])
        assert body == {"query": QUERY, "method": "text-match", "moments": [], "trisense": None}, body


def test_an_empty_job_ids_list_is_a_422_that_says_what_to_send(served):
    server, _ = served
    with server.client() as c:
        r = c.post("/v1/search", json={"query": QUERY, "job_ids": []})
        assert r.status_code == 422, r.text
        assert r.json() == {"detail": "job_ids: an empty list matches no job; leave it out to search every job"}
        schema = c.get("/openapi.json").json()["components"]["schemas"]["SearchRequest"]["properties"]["job_ids"]
        assert schema["anyOf"][0]["minItems"] == 1


def test_the_store_matches_indexed_sources_to_their_jobs_exactly(tmp_path):
    """Owners on real SQLite: an upload's `<name>#<first 8 of its id>`, a batch file's name (the newer of two
    jobs of one name), nothing for a source of no job; text rows of `[]` are none, not all."""
    store = Store(tmp_path / "s.db")
    upload = store.create_job("upload", "a#b.mp4")
    old = store.create_job("batch", "cams/door.mp4")
    new = store.create_job("batch", "cams/door.mp4")
    store.update_job(new, status="done")
    store.append_rows(upload, "a#b.mp4", [], [{"start": 0.0, "end": 1.0, "text": "hello"}])
    sources = [f"a#b.mp4#{upload[:8]}", "cams/door.mp4", f"other.mp4#{upload[:8]}", f"a#b.mp4#{old[:8]}", "x"]
    assert store.text_rows([]) == ([], []) and len(store.text_rows(None)[0]) == 1
    assert store.grounding_owners(sources) == {sources[0]: upload, "cams/door.mp4": new}
    assert store.text_rows([upload[:8]]) == ([], [])
