"""The hand-off queue through the real service: a customer hands off, keeps writing, a person
reads the whole conversation, replies, resolves; the resolution becomes the customer's memory.
Idle sessions are remembered too. Roles and tenants bound every route."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from config.settings import ApiKey
from service.auth import hash_key
from service.idle_sessions import close_idle_sessions
from storage.memory import Scope
from tests.helpers import pilot_over_own_store

pytestmark = pytest.mark.integration
PUBLIC = {"access_level": "public", "tier": "basic"}
KEYS = [
    ApiKey(name="widget", sha256=hash_key("widget-key"), tenant="acme", slots=PUBLIC),
    ApiKey(name="backend", sha256=hash_key("backend-key"), tenant="acme", slots=PUBLIC,
           trust_customer_id=True),
    ApiKey(name="ana", sha256=hash_key("ana-key"), tenant="acme", role="agent"),
    ApiKey(name="lead", sha256=hash_key("lead-key"), tenant="acme", role="admin"),
    ApiKey(name="globex-agent", sha256=hash_key("globex-agent-key"), tenant="globex",
           role="agent"),
]


def auth(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {name}-key"}


@pytest.fixture
def pilot(settings, example_kb, tmp_path):
    with pilot_over_own_store(settings, example_kb, tmp_path / "data", *KEYS) as (app, _), \
            TestClient(app) as client:
        yield client, app.state.pilot


def post(client, path, key, **body):
    return client.post(path, json=body, headers=auth(key))


def answered_session(client, customer: str) -> str:
    """A new session of ``customer`` (the backend key) whose first question was answered."""
    session = post(client, "/v1/sessions", "backend", customer_id=customer).json()["session_id"]
    first = post(client, f"/v1/sessions/{session}/messages", "backend",
                 message="How long does a refund take?")
    assert first.json()["verdict"] == "answered"
    return session


def test_a_hand_off_round_trip_through_the_service(pilot):
    client, _ = pilot
    session = answered_session(client, "c-77")
    assert post(client, f"/v1/sessions/{session}/handoff", "backend",
                reason="refund still missing").status_code == 200
    later = post(client, f"/v1/sessions/{session}/messages", "backend",
                 message="Order ORD-55812 has had no refund for three weeks.").json()
    assert later["verdict"] == "handoff" and later["turn_index"] == 1

    [queued] = client.get("/v1/handoffs", headers=auth("ana")).json()["handoffs"]
    assert queued["session"]["session_id"] == session
    assert queued["session"]["handoff_reason"] == "refund still missing"
    assert queued["waiting"] == 1
    assert [t["status"] for t in queued["turns"]] == ["done", "waiting_for_agent"]
    assert queued["citations"] == ["billing/refunds.md"]
    assert {"type": "order", "value": "ORD-55812"}.items() <= queued["entities"][0].items()

    reply = post(client, f"/v1/sessions/{session}/agent-messages", "ana",
                 message="I have re-sent the refund; it arrives in 2 days.")
    assert reply.status_code == 201 and reply.json()["turn_index"] == 2
    seen = client.get(f"/v1/sessions/{session}", headers=auth("backend")).json()["turns"]
    assert (seen[-1]["from"], seen[-1]["answer"]) == (
        "agent", "I have re-sent the refund; it arrives in 2 days.")

    resolved = post(client, f"/v1/sessions/{session}/resolve", "ana", note="refund re-sent")
    assert resolved.json()["remembered"] is True
    assert resolved.json()["session"]["status"] == "resolved"
    assert client.get("/v1/handoffs", headers=auth("ana")).json()["handoffs"] == []
    closed = post(client, f"/v1/sessions/{session}/messages", "backend", message="thanks")
    assert closed.status_code == 409 and closed.json()["error"]["code"] == "session_resolved"

    _, pilot_context = pilot
    [memory] = pilot_context.runtime.memory.recall(Scope("c-77", "acme"), "refund")
    assert memory.resolution == "resolved by our support team: refund re-sent"


def test_staff_routes_need_a_staff_key_of_the_same_tenant(pilot):
    client, _ = pilot
    session = post(client, "/v1/sessions", "widget").json()["session_id"]
    post(client, f"/v1/sessions/{session}/handoff", "widget")
    refused = client.get("/v1/handoffs", headers=auth("widget"))
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "wrong_role"
    assert post(client, f"/v1/sessions/{session}/agent-messages", "widget",
                message="hi").status_code == 403
    assert post(client, "/v1/sessions", "ana").status_code == 403  # staff do not chat
    assert client.get("/v1/handoffs", headers=auth("globex-agent")).json()["handoffs"] == []
    assert post(client, f"/v1/sessions/{session}/agent-messages", "globex-agent",
                message="hi").status_code == 404
    assert post(client, f"/v1/sessions/{session}/resolve", "globex-agent",
                note="x").status_code == 404
    assert len(client.get("/v1/handoffs", headers=auth("lead")).json()["handoffs"]) == 1


@pytest.mark.parametrize(("path", "body"), [
    ("agent-messages", {"message": "   "}), ("agent-messages", {}),
    ("resolve", {"note": ""}), ("resolve", {"note": "x", "extra": 1}),
    ("agent-messages", {"message": "refund sent\x00"}),
    ("agent-messages", {"message": "\x1b[2J\x1b[31mrefund sent"}),
    ("agent-messages", {"message": "refund \x9b sent"}),
    ("agent-messages", {"message": "refund \u202esent"}),
    ("agent-messages", {"message": "\u200b\u200b \ufeff"}),
    ("resolve", {"note": "done\x07"}), ("resolve", {"note": "\u200b"}),
])
def test_bad_staff_requests_are_named_and_store_nothing(pilot, path, body):
    client, _ = pilot
    session = post(client, "/v1/sessions", "widget").json()["session_id"]
    response = client.post(f"/v1/sessions/{session}/{path}", json=body, headers=auth("ana"))
    assert response.status_code == 422
    if body and "extra" not in body:  # the field is named
        assert next(iter(body)) in str(response.json()), response.json()
    assert client.get(f"/v1/handoffs/{session}", headers=auth("ana")).json()["turns"] == []


def test_a_person_replying_takes_the_conversation_over(pilot):
    client, _ = pilot
    session = post(client, "/v1/sessions", "widget").json()["session_id"]
    post(client, f"/v1/sessions/{session}/agent-messages", "ana", message="Hello, I am Ana.")
    later = post(client, f"/v1/sessions/{session}/messages", "widget",
                 message="How long does a refund take?").json()
    assert later["verdict"] == "handoff"  # the assistant no longer answers over a person


def test_idle_sessions_are_remembered_once(pilot):
    client, pilot_context = pilot
    session = post(client, "/v1/sessions", "backend", customer_id="c-9").json()["session_id"]
    post(client, f"/v1/sessions/{session}/messages", "backend",
         message="How long does a refund take?")
    memory = pilot_context.runtime.memory
    last = max(t["ts"] for t in memory.session_turns(Scope("c-9", "acme"), session))
    minutes = pilot_context.settings.pilot.idle_close_minutes
    assert close_idle_sessions(pilot_context, now=last + 1) == []
    later = last + minutes * 60 + 1
    assert close_idle_sessions(pilot_context, now=later) == [session]
    assert close_idle_sessions(pilot_context, now=later) == []  # once per quiet spell
    [memory] = pilot_context.runtime.memory.recall(Scope("c-9", "acme"), "refund")
    assert memory.session_id == session and memory.resolution.startswith("answered")


def sessions_read(memory, monkeypatch) -> list[str]:
    """The ids of the sessions whose turns are read from now on."""
    read: list[str] = []
    session_turns = memory.session_turns
    monkeypatch.setattr(memory, "session_turns",
                        lambda scope, session_id: read.append(session_id) or
                        session_turns(scope, session_id))
    return read


def test_the_idle_sweep_reads_only_sessions_active_since_their_memory_was_written(pilot,
                                                                                 monkeypatch):
    client, pilot_context = pilot
    memory = pilot_context.runtime.memory
    sessions = [post(client, "/v1/sessions", "backend", customer_id=f"c-{n}").json()["session_id"]
                for n in range(3)]
    for session in sessions:
        post(client, f"/v1/sessions/{session}/messages", "backend",
             message="How long does a refund take?")
    minutes = pilot_context.settings.pilot.idle_close_minutes
    quiet = time.time() + minutes * 60 + 1
    assert sorted(close_idle_sessions(pilot_context, now=quiet)) == sorted(sessions)
    read = sessions_read(memory, monkeypatch)
    assert close_idle_sessions(pilot_context, now=quiet + 60) == []
    assert read == []  # remembered and quiet: no session's turns are read again
    post(client, f"/v1/sessions/{sessions[1]}/messages", "backend",
         message="And to PayPal?")  # a new spell for this session only
    again = time.time() + minutes * 60 + 1
    assert close_idle_sessions(pilot_context, now=again) == [sessions[1]]
    assert set(read) == {sessions[1]}


def test_a_resolved_session_cannot_be_reopened_or_rated_by_the_customer(pilot):
    """An agent resolves a session that was never handed off: the customer's hand-off request,
    message and feedback afterwards all get 409 and the session stays resolved."""
    client, app_pilot = pilot
    session = answered_session(client, "c-78")
    assert post(client, f"/v1/sessions/{session}/resolve", "ana",
                note="answered").status_code == 200
    for path, body in (("handoff", {"reason": "again"}), ("messages", {"message": "hi"}),
                       ("feedback", {"turn_index": 0, "rating": "down"})):
        refused = post(client, f"/v1/sessions/{session}/{path}", "backend", **body)
        assert refused.status_code == 409, (path, refused.json())
        assert refused.json()["error"]["code"] == "session_resolved"
    header = app_pilot.store.session("acme", session)
    assert header["status"] == "resolved" and not header["handoff"]
    assert client.get("/v1/handoffs", headers=auth("ana")).json()["handoffs"] == []


def test_the_customers_view_of_a_session_holds_no_staff_internal_fields(pilot):
    client, _ = pilot
    session = post(client, "/v1/sessions", "backend", customer_id="c-79").json()["session_id"]
    post(client, f"/v1/sessions/{session}/handoff", "backend", reason="please call")
    assert post(client, f"/v1/sessions/{session}/agent-messages", "ana",
                message="Calling you now.").status_code == 201
    post(client, f"/v1/sessions/{session}/resolve", "ana", note="internal: VIP, refunded")
    seen = client.get(f"/v1/sessions/{session}", headers=auth("backend")).json()
    assert seen["session"]["status"] == "resolved"
    assert not {"owner", "resolution", "resolved_by", "memory_written_at"} & set(seen["session"])
    assert "internal: VIP" not in str(seen)
    [reply] = seen["turns"]
    assert reply["from"] == "agent" and "agent" not in reply  # which staff key: staff only
    staff = client.get(f"/v1/handoffs/{session}", headers=auth("ana")).json()
    assert staff["session"]["resolution"] == "internal: VIP, refunded"


def test_the_idle_sweep_stops_reading_sessions_that_never_got_a_message(pilot, monkeypatch):
    client, pilot_context = pilot
    memory = pilot_context.runtime.memory
    empty = post(client, "/v1/sessions", "backend", customer_id="c-e").json()["session_id"]
    minutes = pilot_context.settings.pilot.idle_close_minutes
    quiet = time.time() + minutes * 60 + 1
    assert close_idle_sessions(pilot_context, now=quiet) == []  # nothing to remember
    read = sessions_read(memory, monkeypatch)
    assert close_idle_sessions(pilot_context, now=quiet + 60) == []
    assert read == []  # before: read again every minute, forever
    post(client, f"/v1/sessions/{empty}/messages", "backend", message="How long does a refund take?")
    later = time.time() + minutes * 60 + 1
    assert close_idle_sessions(pilot_context, now=later) == [empty]  # a first message counts
