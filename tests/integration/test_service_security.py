"""The pilot under attack and under faults: sessions owned by keys, body caps before reading,
auth before bodies, customer ids checked at creation, redacted traces for customer keys,
hidden entities never confirmed, and a removed data directory giving JSON 503s."""

from __future__ import annotations

import contextlib
import shutil
import socket
import time

import pytest
from fastapi.testclient import TestClient

from config.settings import ApiKey
from service.app import create_app
from service.auth import hash_key
from storage.kb.knowledge_base import KnowledgeBase
from storage.qdrant.edge_store import EdgeStore
from storage.retrieval.request import RetrievalRequest
from storage.retrieval.retriever import QdrantRetriever
from tests.helpers import (
    answering_llm,
    pilot_over_own_store,
    running_server,
    scripted_runtime,
    with_api_keys,
)

pytestmark = pytest.mark.integration
ACME_CUSTOMER = {"access_level": "customer", "tier": "enterprise"}
KEYS = [
    ApiKey(
        name="backend",
        sha256=hash_key("backend-key"),
        tenant="acme",
        slots={"access_level": "internal", "tier": "enterprise"},
        trust_customer_id=True,
    ),
    ApiKey(
        name="backend-2",
        sha256=hash_key("backend-2-key"),
        tenant="acme",
        slots={"access_level": "internal", "tier": "enterprise"},
        trust_customer_id=True,
    ),
    ApiKey(name="starter", sha256=hash_key("starter-key"), tenant="acme", slots=ACME_CUSTOMER),
]


def auth(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {name}-key"}


@pytest.fixture
def pilot(settings, example_kb, tmp_path):
    """An app over its own embedded store (KB + memory + sessions) in ``tmp_path/data``."""
    with pilot_over_own_store(settings, example_kb, tmp_path / "data", *KEYS) as (app, _):
        yield app, tmp_path / "data"


@pytest.fixture
def client(pilot):
    with TestClient(pilot[0]) as test_client:
        yield test_client


def backend_session(client, customer: str = "c-9") -> str:
    made = client.post("/v1/sessions", json={"customer_id": customer}, headers=auth("backend"))
    assert made.status_code == 201, made.text
    return made.json()["session_id"]


def test_a_session_belongs_to_its_keys_not_to_the_tenant(client):
    session = backend_session(client)
    said = client.post(
        f"/v1/sessions/{session}/messages",
        headers=auth("backend"),
        json={"message": "How long does a refund take?"},
    )
    assert said.status_code == 200
    for method, path, body in [
        ("get", f"/v1/sessions/{session}", None),
        ("post", f"/v1/sessions/{session}/messages", {"message": "What did I ask?"}),
        ("post", f"/v1/sessions/{session}/feedback", {"turn_index": 0, "rating": "down"}),
        ("post", f"/v1/sessions/{session}/handoff", {"reason": "x"}),
    ]:
        response = client.request(method, path, json=body, headers=auth("starter"))
        assert response.status_code == 404, (path, response.text)
        assert response.json()["error"]["code"] == "unknown_session"
    # a key with the same tenant, enforced slots and trust is the same owner
    assert client.get(f"/v1/sessions/{session}", headers=auth("backend-2")).status_code == 200
    stored = client.get(f"/v1/sessions/{session}", headers=auth("backend")).json()
    assert stored["session"]["handoff"] is False and len(stored["turns"]) == 1


@pytest.mark.parametrize("customer", ["c\x01x", "   ", " c-9", "c-9\n", "x" * 201, "c\x7f"])
def test_customer_ids_are_checked_when_the_session_is_made(client, customer):
    response = client.post("/v1/sessions", json={"customer_id": customer}, headers=auth("backend"))
    assert response.status_code == 422
    assert response.json()["error"]["details"][0]["field"] == "customer_id"


@pytest.mark.parametrize(
    "body", [b'{"customer_id": ', b'{"customer_id": "c-\xff\xfe"}'], ids=["json", "utf-8"]
)
def test_malformed_json_or_invalid_utf8_is_reported_as_the_body(client, body):
    response = client.post(
        "/v1/sessions",
        content=body,
        headers={**auth("backend"), "Content-Type": "application/json"},
    )
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid_request"
    assert [d["field"] for d in response.json()["error"]["details"]] == ["body"]


def test_a_customer_key_sees_costs_not_internals_and_a_backend_sees_all(client):
    widget = client.post("/v1/sessions", json={}, headers=auth("starter")).json()["session_id"]
    seen = client.post(
        f"/v1/sessions/{widget}/messages",
        headers=auth("starter"),
        json={"message": "How long does a refund take?"},
    ).json()
    assert set(seen["trace"]) == {
        "steps",
        "llm_calls",
        "prompt_tokens",
        "completion_tokens",
        "duration_ms",
    }
    assert all(set(step) == {"name", "ms"} for step in seen["trace"]["steps"])
    assert seen["citations"] and seen["trace"]["llm_calls"] >= 1
    full = client.post(
        f"/v1/sessions/{backend_session(client)}/messages",
        headers=auth("backend"),
        json={"message": "How long does a refund take?"},
    ).json()
    assert full["trace"]["steps"][0]["detail"] is not None and "notes" in full["trace"]


def test_an_entity_only_a_hidden_document_names_is_never_confirmed(example_kb):
    retriever = QdrantRetriever(kb=example_kb)
    customer = retriever.search_queries(
        RetrievalRequest(["what is OVR-7?"], ACME_CUSTOMER, strict=False)
    )
    assert customer.metadata["entities"] == []
    assert not any("internal/" in r.metadata["source_id"] for r in customer.results)
    internal = retriever.search_queries(
        RetrievalRequest(["what is OVR-7?"], {"access_level": "internal"}, strict=False)
    )
    assert "ovr-7" in internal.metadata["entities"]


def test_the_page_is_served_with_a_content_security_policy(client):
    page = client.get("/")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-content-type-options"] == "nosniff"


def raw_post(
    port: int, path: str, headers: dict[str, str], chunks: int, chunk: bytes
) -> tuple[int, int]:
    """POST a chunked body (no Content-Length); returns (status, bytes sent before the
    server answered or closed)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    head = [
        f"POST {path} HTTP/1.1",
        "Host: 127.0.0.1",
        "Transfer-Encoding: chunked",
        "Content-Type: application/json",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
    sent = 0
    sock.setblocking(False)
    reply = b""
    try:
        for _ in range(chunks):
            with contextlib.suppress(BlockingIOError):
                reply += sock.recv(65536)
            if reply:
                break
            try:
                sock.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            except BlockingIOError:
                time.sleep(0.01)
                continue
            sent += len(chunk)
        sock.setblocking(True)
        if not reply:
            sock.sendall(b"0\r\n\r\n")
        deadline = time.time() + 10
        while b"\r\n\r\n" not in reply and time.time() < deadline:
            reply += sock.recv(65536)
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        sock.close()
    return int(reply.split(b" ", 2)[1]), sent


def test_a_chunked_body_is_cut_at_the_limit_and_auth_comes_first(pilot):
    app, _ = pilot
    chunk = b"x" * 16384
    with running_server(app) as (url, _server):
        port = int(url.rsplit(":", 1)[1])
        status, sent = raw_post(port, "/v1/search", {}, chunks=400, chunk=chunk)
        assert status == 401 and sent < 400 * len(chunk)  # no key: refused before the body
        status, sent = raw_post(port, "/v1/search", auth("starter"), chunks=400, chunk=chunk)
        assert status == 413 and sent < 400 * len(chunk)  # cut soon after 100 KB


def test_a_removed_data_directory_gives_json_503s_and_nothing_is_recreated(pilot):
    app, data = pilot
    with TestClient(app) as client:
        session = backend_session(client)
        assert client.get("/readyz").status_code == 200
        shutil.rmtree(data)
        ready = client.get("/readyz")
        assert ready.status_code == 503 and "removed" in ready.json()["checks"]["qdrant"]
        for method, path, body in [
            ("post", "/v1/sessions", {"customer_id": "c-10"}),
            ("get", f"/v1/sessions/{session}", None),
            ("post", f"/v1/sessions/{session}/handoff", {"reason": "x"}),
            ("post", f"/v1/sessions/{session}/messages", {"message": "Refund time?"}),
            ("post", "/v1/search", {"query": "refund"}),
        ]:
            response = client.request(method, path, json=body, headers=auth("backend"))
            assert response.status_code == 503, (path, response.text)
            assert response.headers["content-type"].startswith("application/json")
            assert response.json()["error"]["code"] == "unavailable"
        assert not data.exists(), "nothing was re-created in a new, unlocked directory"


def test_a_bug_is_a_json_500_with_nothing_of_it_shown(pilot, monkeypatch):
    app, _ = pilot
    with TestClient(app, raise_server_exceptions=False) as client:
        session = backend_session(client)
        monkeypatch.setattr("service.stores.pilot_store.PilotStore.feedback", lambda *_a, **_k: 1 / 0)
        response = client.get(f"/v1/sessions/{session}", headers=auth("backend"))
    assert response.status_code == 500
    assert response.json() == {
        "error": {"code": "internal", "message": "something went wrong on our side"}
    }


LONE_SURROGATE = '"\\ud800"'  # valid JSON, not valid Unicode text


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/sessions", '{"slots": {"product": ' + LONE_SURROGATE + "}}"),
        ("/v1/sessions", '{"customer_id": ' + LONE_SURROGATE + "}"),
        ("/v1/search", '{"query": "refund", "filter": {"product": ' + LONE_SURROGATE + "}}"),
        ("/v1/search", '{"query": ' + LONE_SURROGATE + "}"),
    ],
)
def test_a_lone_surrogate_is_a_named_422_not_a_500(client, path, body):
    response = client.post(
        path, content=body, headers={**auth("backend"), "Content-Type": "application/json"}
    )
    assert response.status_code == 422, response.text
    details = response.json()["error"]["details"]
    assert any("unicode" in d["problem"].lower() for d in details), details


def test_a_lone_surrogate_in_a_message_is_refused_and_nothing_is_stored(client):
    session = client.post("/v1/sessions", json={}, headers=auth("starter")).json()["session_id"]
    response = client.post(
        f"/v1/sessions/{session}/messages",
        content='{"message": "refund ' + LONE_SURROGATE[1:-1] + '"}',
        headers={**auth("starter"), "Content-Type": "application/json"},
    )
    assert response.status_code == 422
    assert client.get(f"/v1/sessions/{session}", headers=auth("starter")).json()["turns"] == []


def test_no_key_can_name_an_anonymous_visitor(client):
    visitor = client.post("/v1/sessions", json={}, headers=auth("starter")).json()
    assert visitor["customer_id"].startswith("anon-")
    response = client.post(
        "/v1/sessions", json={"customer_id": visitor["customer_id"]}, headers=auth("backend")
    )
    assert response.status_code == 422
    assert "anonymous" in response.json()["error"]["details"][0]["problem"]


def test_every_response_carries_the_pages_security_headers_and_no_cdn_docs_page(client):
    assert client.get("/docs").status_code == 404
    for response in (
        client.get("/openapi.json"),
        client.get("/healthz"),
        client.post("/v1/sessions", json={}, headers=auth("starter")),
    ):
        assert "default-src 'none'" in response.headers["content-security-policy"], response.url
        assert response.headers["x-content-type-options"] == "nosniff"


def read_until_closed(sock: socket.socket, limit_s: float) -> bytes:
    sock.settimeout(limit_s)
    reply = b""
    while True:
        part = sock.recv(65536)
        if not part:
            return reply
        reply += part


@pytest.mark.serial
def test_headers_that_trickle_in_get_408_and_every_held_connection_is_freed(
    settings, example_kb, tmp_path
):
    configured = with_api_keys(settings, *KEYS)
    store = EdgeStore(tmp_path / "slowloris")
    kb = KnowledgeBase(configured, store, example_kb.encoders)
    runtime = scripted_runtime(configured, kb, answering_llm(), memory_store=store)
    with running_server(create_app(configured, tmp_path, runtime), header_timeout_s=1.0) as (
        url,
        _server,
    ):
        port = int(url.rsplit(":", 1)[1])
        trickling = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(20)]
        silent = socket.create_connection(("127.0.0.1", port), timeout=10)
        for sock in trickling:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        started = time.monotonic()
        for _ in range(2):  # a header line now and then, never the end of the headers
            time.sleep(0.3)
            for sock in trickling:
                sock.sendall(b"X-Slow: 1\r\n")
        replies = [read_until_closed(sock, 5) for sock in trickling]
        silent_reply = read_until_closed(silent, 5)
        held_for = time.monotonic() - started
        # a client that sends its headers in pieces, in time, is served, and its keep-alive
        # connection serves a second request
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\n")
            time.sleep(0.3)
            sock.sendall(b"Host: 127.0.0.1\r\n\r\n")
            first = sock.recv(65536)
            time.sleep(1.5)  # longer than the header deadline, inside keep-alive
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            second = sock.recv(65536)
        for sock in (*trickling, silent):
            sock.close()
    assert all(r.startswith(b"HTTP/1.1 408") and b"header_timeout" in r for r in replies), replies[:2]
    assert silent_reply.startswith(b"HTTP/1.1 408"), silent_reply[:200]
    assert held_for < 4, held_for  # closed 1 s after the first byte
    assert first.startswith(b"HTTP/1.1 200") and second.startswith(b"HTTP/1.1 200"), (first, second)
    store.close()


@pytest.mark.serial
@pytest.mark.parametrize("sender", ["stops", "trickles"])
def test_a_body_not_arrived_in_time_gets_408_and_the_connection_is_freed(
    settings, example_kb, tmp_path, sender
):
    """A body that stops, or that trickles in a byte at a time (each gap shorter than the
    deadline), is refused once the whole body is late."""
    configured = with_api_keys(settings, *KEYS)
    configured = configured.model_copy(
        update={"pilot": configured.pilot.model_copy(update={"body_timeout_s": 1.0})}
    )
    store = EdgeStore(tmp_path / "slow")
    kb = KnowledgeBase(configured, store, example_kb.encoders)
    runtime = scripted_runtime(configured, kb, answering_llm(), memory_store=store)
    with running_server(create_app(configured, tmp_path, runtime)) as (url, _server):
        port = int(url.rsplit(":", 1)[1])
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        head = [
            "POST /v1/search HTTP/1.1",
            "Host: 127.0.0.1",
            "Content-Length: 50",
            "Content-Type: application/json",
            "Authorization: Bearer starter-key",
        ]
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + b'{"query": ')
        started = time.monotonic()
        reply = b""
        if sender == "trickles":
            sock.setblocking(False)
            for _ in range(10):  # single bytes 0.4 s apart, for up to 4 s
                time.sleep(0.4)
                try:
                    reply = sock.recv(65536)
                    break  # answered
                except BlockingIOError:
                    sock.sendall(b" ")
            sock.setblocking(True)
            sock.settimeout(10)
        while b"body_timeout" not in reply:  # the status line, then the JSON error
            part = sock.recv(65536)
            if not part:
                break
            reply += part
        answered_after = time.monotonic() - started
        sock.close()
    assert reply.startswith(b"HTTP/1.1 408"), reply[:200]
    assert b"body_timeout" in reply
    assert answered_after < 2.5, answered_after  # the deadline is 1 s for the whole body
    store.close()
