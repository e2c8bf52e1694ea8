"""The hand-off queue through the real service: a customer hands off, keeps writing, a person
reads the whole conversation, replies, resolves; the resolution becomes the customer's memory.
Idle sessions are remembered too. Roles and tenants bound every route."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor

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
    ApiKey(
        name="backend",
        sha256=hash_key("backend-key"),
        tenant="acme",
        slots=PUBLIC,
        trust_customer_id=True,
    ),
    ApiKey(
        name="portal",
        sha256=hash_key("portal-key"),
        tenant="acme",
        slots={"access_level": "customer", "tier": "enterprise"},
    ),
    ApiKey(name="ana", sha256=hash_key("ana-key"), tenant="acme", role="agent"),
    ApiKey(name="ben", sha256=hash_key("ben-key"), tenant="acme", role="agent"),
    ApiKey(
        name="senior",
        sha256=hash_key("senior-key"),
        tenant="acme",
        role="agent",
        slots={"access_level": "internal", "tier": "enterprise"},
    ),
    ApiKey(name="lead", sha256=hash_key("lead-key"), tenant="acme", role="admin"),
    ApiKey(name="globex-agent", sha256=hash_key("globex-agent-key"), tenant="globex", role="agent"),
    ApiKey(
        name="intranet",
        sha256=hash_key("intranet-key"),
        tenant="acme",
        slots={"access_level": "internal"},
        trust_customer_id=True,
    ),
]


def auth(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {name}-key"}


@pytest.fixture
def pilot(settings, example_kb, tmp_path):
    with (
        pilot_over_own_store(settings, example_kb, tmp_path / "data", *KEYS) as (app, _),
        TestClient(app) as client,
    ):
        yield client, app.state.pilot


def post(client, path, key, **body):
    return client.post(path, json=body, headers=auth(key))


def answered_session(client, customer: str) -> str:
    """A new session of ``customer`` (the backend key) whose first question was answered."""
    session = post(client, "/v1/sessions", "backend", customer_id=customer).json()["session_id"]
    first = post(
        client, f"/v1/sessions/{session}/messages", "backend", message="How long does a refund take?"
    )
    assert first.json()["verdict"] == "answered"
    return session


def test_a_hand_off_round_trip_through_the_service(pilot):
    client, _ = pilot
    session = answered_session(client, "c-77")
    assert (
        post(
            client, f"/v1/sessions/{session}/handoff", "backend", reason="refund still missing"
        ).status_code
        == 200
    )
    later = post(
        client,
        f"/v1/sessions/{session}/messages",
        "backend",
        message="Order ORD-55812 has had no refund for three weeks.",
    ).json()
    assert later["verdict"] == "handoff" and later["turn_index"] == 2  # 1: the hand-off line
    # stored with the slots it was written under, as every turn (the gap report reads them)
    from storage.memory import Scope

    [to_person] = [
        t for t in pilot[1].memory.session_turns(Scope("c-77", "acme"), session) if t["turn_index"] == 2
    ]
    assert to_person["slots"] == {**PUBLIC, "tenant": "acme"}

    page = client.get("/v1/handoffs", headers=auth("ana")).json()
    [queued] = page["handoffs"]
    assert page["total"] == 1
    assert queued["session"]["session_id"] == session
    assert queued["session"]["handoff_reason"] == "refund still missing"
    assert (queued["first_message"], queued["waiting"]) == ("How long does a refund take?", 1)
    whole = client.get(f"/v1/handoffs/{session}", headers=auth("ana")).json()
    assert [t["status"] for t in whole["turns"]] == ["done", "done", "waiting_for_agent"]
    assert (whole["turns"][1]["user"], whole["turns"][1]["verdict"]) == ("", "handoff")
    assert whole["citations"] == ["billing/refunds.md"]
    assert {"type": "order", "value": "ORD-55812"}.items() <= whole["entities"][0].items()

    assert post(client, f"/v1/handoffs/{session}/take", "ana").status_code == 200
    reply = post(
        client,
        f"/v1/sessions/{session}/agent-messages",
        "ana",
        message="I have re-sent the refund; it arrives in 2 days.",
    )
    assert reply.status_code == 201 and reply.json()["turn_index"] == 3
    [answered] = client.get("/v1/handoffs", headers=auth("ana")).json()["handoffs"]
    assert answered["waiting"] == 0  # the person replied: nothing waits for them any more
    seen = client.get(f"/v1/sessions/{session}", headers=auth("backend")).json()["turns"]
    assert (seen[-1]["from"], seen[-1]["answer"]) == (
        "agent",
        "I have re-sent the refund; it arrives in 2 days.",
    )

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
    assert (
        post(client, f"/v1/sessions/{session}/agent-messages", "widget", message="hi").status_code == 403
    )
    assert post(client, "/v1/sessions", "ana").status_code == 403  # staff do not chat
    assert client.get("/v1/handoffs", headers=auth("globex-agent")).json()["handoffs"] == []
    assert (
        post(client, f"/v1/sessions/{session}/agent-messages", "globex-agent", message="hi").status_code
        == 404
    )
    assert post(client, f"/v1/sessions/{session}/resolve", "globex-agent", note="x").status_code == 404
    assert post(client, f"/v1/handoffs/{session}/take", "globex-agent").status_code == 404
    assert client.get(f"/v1/handoffs/{session}", headers=auth("globex-agent")).status_code == 404
    assert len(client.get("/v1/handoffs", headers=auth("lead")).json()["handoffs"]) == 1


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("agent-messages", {"message": "   "}),
        ("agent-messages", {}),
        ("resolve", {"note": ""}),
        ("resolve", {"note": "x", "extra": 1}),
        ("agent-messages", {"message": "refund sent\x00"}),
        ("agent-messages", {"message": "\x1b[2J\x1b[31mrefund sent"}),
        ("agent-messages", {"message": "refund \x9b sent"}),
        ("agent-messages", {"message": "refund \u202esent"}),
        ("agent-messages", {"message": "\u200b\u200b \ufeff"}),
        ("resolve", {"note": "done\x07"}),
        ("resolve", {"note": "\u200b"}),
    ],
)
def test_bad_staff_requests_are_named_and_store_nothing(pilot, path, body):
    client, _ = pilot
    session = post(client, "/v1/sessions", "widget").json()["session_id"]
    response = client.post(f"/v1/sessions/{session}/{path}", json=body, headers=auth("ana"))
    assert response.status_code == 422
    if body and "extra" not in body:  # the field is named
        assert next(iter(body)) in str(response.json()), response.json()
    assert client.get(f"/v1/handoffs/{session}", headers=auth("lead")).json()["turns"] == []


def test_a_person_taking_the_conversation_stops_the_assistant(pilot):
    client, _ = pilot
    session = post(client, "/v1/sessions", "widget").json()["session_id"]
    refused = post(client, f"/v1/sessions/{session}/agent-messages", "ana", message="Hi, Ana.")
    assert refused.status_code == 409  # not taken: nobody replies over the assistant
    assert post(client, f"/v1/handoffs/{session}/take", "ana").status_code == 200
    post(client, f"/v1/sessions/{session}/agent-messages", "ana", message="Hello, I am Ana.")
    later = post(
        client, f"/v1/sessions/{session}/messages", "widget", message="How long does a refund take?"
    ).json()
    assert later["verdict"] == "handoff"  # the assistant no longer answers over a person


def test_idle_sessions_are_remembered_once(pilot):
    client, pilot_context = pilot
    session = post(client, "/v1/sessions", "backend", customer_id="c-9").json()["session_id"]
    post(client, f"/v1/sessions/{session}/messages", "backend", message="How long does a refund take?")
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
    monkeypatch.setattr(
        memory,
        "session_turns",
        lambda scope, session_id: read.append(session_id) or session_turns(scope, session_id),
    )
    return read


def test_the_idle_sweep_reads_only_sessions_active_since_their_memory_was_written(pilot, monkeypatch):
    client, pilot_context = pilot
    memory = pilot_context.runtime.memory
    sessions = [
        post(client, "/v1/sessions", "backend", customer_id=f"c-{n}").json()["session_id"]
        for n in range(3)
    ]
    for session in sessions:
        post(
            client, f"/v1/sessions/{session}/messages", "backend", message="How long does a refund take?"
        )
    minutes = pilot_context.settings.pilot.idle_close_minutes
    quiet = time.time() + minutes * 60 + 1
    assert sorted(close_idle_sessions(pilot_context, now=quiet)) == sorted(sessions)
    read = sessions_read(memory, monkeypatch)
    assert close_idle_sessions(pilot_context, now=quiet + 60) == []
    assert read == []  # remembered and quiet: no session's turns are read again
    post(
        client, f"/v1/sessions/{sessions[1]}/messages", "backend", message="And to PayPal?"
    )  # a new spell for this session only
    again = time.time() + minutes * 60 + 1
    assert close_idle_sessions(pilot_context, now=again) == [sessions[1]]
    assert set(read) == {sessions[1]}


def test_a_resolved_session_cannot_be_reopened_or_rated_by_the_customer(pilot):
    """An agent resolves a session that was never handed off: the customer's hand-off request,
    message and feedback afterwards all get 409 and the session stays resolved."""
    client, app_pilot = pilot
    session = answered_session(client, "c-78")
    assert post(client, f"/v1/sessions/{session}/resolve", "ana", note="answered").status_code == 200
    for path, body in (
        ("handoff", {"reason": "again"}),
        ("messages", {"message": "hi"}),
        ("feedback", {"turn_index": 0, "rating": "down"}),
    ):
        refused = post(client, f"/v1/sessions/{session}/{path}", "backend", **body)
        assert refused.status_code == 409, (path, refused.json())
        assert refused.json()["error"]["code"] == "session_resolved"
    header = app_pilot.store.session("acme", session)
    assert header["status"] == "resolved" and "handoff_at" not in header and "handoff" not in header
    assert client.get("/v1/handoffs", headers=auth("ana")).json()["handoffs"] == []


def test_the_customers_view_of_a_session_holds_no_staff_internal_fields(pilot):
    client, _ = pilot
    session = post(client, "/v1/sessions", "backend", customer_id="c-79").json()["session_id"]
    post(client, f"/v1/sessions/{session}/handoff", "backend", reason="please call")
    post(client, f"/v1/handoffs/{session}/take", "ana")
    assert (
        post(
            client, f"/v1/sessions/{session}/agent-messages", "ana", message="Calling you now."
        ).status_code
        == 201
    )
    post(client, f"/v1/sessions/{session}/resolve", "ana", note="internal: VIP, refunded")
    seen = client.get(f"/v1/sessions/{session}", headers=auth("backend")).json()
    assert seen["session"]["status"] == "resolved"
    assert not {"owner", "resolution", "resolved_by", "memory_written_at"} & set(seen["session"])
    assert "internal: VIP" not in str(seen)
    [line, reply] = seen["turns"]  # the button's hand-off line, the person's reply
    assert line["verdict"] == "handoff" and "from" not in line
    assert reply["from"] == "agent" and "agent" not in reply  # which staff key: staff only
    staff = client.get(f"/v1/handoffs/{session}", headers=auth("ana")).json()
    assert staff["session"]["resolution"] == "internal: VIP, refunded"


def test_a_taken_over_session_never_shows_its_customer_a_staff_key_or_the_turns_internals(pilot):
    client, _ = pilot
    session = answered_session(client, "c-80")
    assert post(client, f"/v1/handoffs/{session}/take", "ana").status_code == 200
    seen = client.get(f"/v1/sessions/{session}", headers=auth("backend")).json()
    assert seen["session"]["handoff_reason"] == "taken over by our support team"
    assert "ana" not in json.dumps(seen["session"])
    assert seen["turns"] and all(not {"slots", "claim", "agent"} & set(t) for t in seen["turns"])
    staff = client.get(f"/v1/handoffs/{session}", headers=auth("ana")).json()
    assert staff["session"]["taken_by"] == "ana"


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


def handed_off(client, key: str = "widget") -> str:
    session = post(client, "/v1/sessions", key).json()["session_id"]
    assert post(client, f"/v1/sessions/{session}/handoff", key).status_code == 200
    return session


def test_one_person_has_a_conversation_and_an_admin_can_reassign_it(pilot):
    client, _ = pilot
    session = handed_off(client)
    assert post(client, f"/v1/handoffs/{session}/take", "ana").status_code == 200
    [row] = client.get("/v1/handoffs", headers=auth("ben")).json()["handoffs"]
    assert row["session"]["taken_by"] == "ana"  # others see who has it
    for path, body in (
        ("handoffs/{s}/take", {}),
        ("sessions/{s}/agent-messages", {"message": "Ben here"}),
        ("sessions/{s}/resolve", {"note": "done"}),
    ):
        refused = post(client, "/v1/" + path.format(s=session), "ben", **body)
        assert refused.status_code == 409 and refused.json()["error"]["code"] == "taken", path
    assert client.get(f"/v1/handoffs/{session}", headers=auth("ben")).status_code == 403
    assert post(client, f"/v1/handoffs/{session}/assign", "ana", agent="ben").status_code == 403
    unknown = post(client, f"/v1/handoffs/{session}/assign", "lead", agent="nobody")
    assert unknown.status_code == 422 and "nobody" in unknown.json()["error"]["message"]
    assert post(client, f"/v1/handoffs/{session}/assign", "lead", agent="ben").status_code == 200
    assert (
        post(client, f"/v1/sessions/{session}/agent-messages", "ben", message="Ben here").status_code
        == 201
    )
    assert (
        post(client, f"/v1/sessions/{session}/agent-messages", "ana", message="Ana here").status_code
        == 409
    )


def test_the_queue_comes_a_page_at_a_time_oldest_first_and_polls_cheaply(pilot):
    client, _ = pilot
    sessions = [handed_off(client) for _ in range(5)]
    first = client.get("/v1/handoffs?limit=2", headers=auth("ana"))
    page = first.json()
    assert (page["total"], len(page["handoffs"])) == (5, 2)
    later = client.get("/v1/handoffs?limit=2&offset=4", headers=auth("ana")).json()
    assert [r["session"]["session_id"] for r in page["handoffs"] + later["handoffs"]] == sessions[
        :2
    ] + sessions[4:]
    etag = first.headers["etag"]
    same = client.get("/v1/handoffs?limit=2", headers={**auth("ana"), "If-None-Match": etag})
    assert same.status_code == 304 and same.content == b""
    for header in (f"W/{etag}", f'"other", {etag}', "*"):  # weak, in a list, any
        polled = client.get("/v1/handoffs?limit=2", headers={**auth("ana"), "If-None-Match": header})
        assert polled.status_code == 304, header
    post(client, f"/v1/handoffs/{sessions[0]}/take", "ana")
    changed = client.get("/v1/handoffs?limit=2", headers={**auth("ana"), "If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["etag"] != etag
    for bad in ("limit=0", "limit=101", "offset=-1", "limit=x"):
        refused = client.get(f"/v1/handoffs?{bad}", headers=auth("ana"))
        assert refused.status_code == 422 and bad.split("=")[0] in str(refused.json()), bad


def test_an_agent_reads_only_what_their_keys_slots_allow(pilot):
    """The customer's key may read a customer-only article; an agent key limited to public
    articles sees the conversation with that answer withheld, a senior agent sees it."""
    client, _ = pilot
    session = post(client, "/v1/sessions", "portal").json()["session_id"]
    answer = post(
        client,
        f"/v1/sessions/{session}/messages",
        "portal",
        message="How do I change the email address of my account?",
    ).json()
    assert answer["verdict"] == "answered", answer
    assert answer["citations"][0]["source_id"] == "accounts/change-email.md"
    post(client, f"/v1/sessions/{session}/handoff", "portal")
    public = client.get(f"/v1/handoffs/{session}", headers=auth("ana")).json()
    assert public["turns"][0]["answer"].startswith("[withheld")
    assert public["turns"][0]["withheld_citations"] == 1
    assert public["citations"] == [] and "change-email" not in str(public)
    assert answer["answer"] not in str(public)
    senior = client.get(f"/v1/handoffs/{session}", headers=auth("senior")).json()
    assert senior["turns"][0]["answer"] == answer["answer"]
    assert senior["citations"] == ["accounts/change-email.md"]


def test_a_session_read_links_only_the_cited_pages_its_slots_may_read(pilot):
    from service.domain.staff_reads import with_cited_pages

    client, state = pilot
    session = post(client, "/v1/sessions", "portal").json()["session_id"]
    message = "How do I change the email address of my account?"
    answer = post(client, f"/v1/sessions/{session}/messages", "portal", message=message).json()
    assert answer["verdict"] == "answered", answer
    read = client.get(f"/v1/sessions/{session}", headers=auth("portal")).json()
    [page] = read["turns"][0]["citations"]
    assert page["source_id"] == "accounts/change-email.md" and page["title"] and page["url"]
    # under slots that may not read the customer-only page (its access changed since) it goes
    turns = [{"turn_index": 0, "answer": "...", "citations": ["accounts/change-email.md"]}]
    assert with_cited_pages(state.runtime, {"access_level": "public"}, turns)[0]["citations"] == []


def test_an_agent_cannot_read_sessions_outside_the_queue(pilot):
    client, _ = pilot
    session = answered_session(client, "c-80")  # open: never handed off
    assert client.get(f"/v1/handoffs/{session}", headers=auth("ana")).status_code == 404
    assert client.get(f"/v1/handoffs/{session}", headers=auth("lead")).status_code == 200


def test_concurrent_resolves_apply_once(pilot):
    client, app_pilot = pilot
    session = handed_off(client)
    with ThreadPoolExecutor(6) as pool:
        answers = list(
            pool.map(
                lambda n: post(client, f"/v1/sessions/{session}/resolve", "lead", note=f"note {n}"),
                range(6),
            )
        )
    won = [a for a in answers if a.status_code == 200]
    assert len(won) == 1, [a.status_code for a in answers]
    assert {a.status_code for a in answers} == {200, 409}
    header = app_pilot.store.session("acme", session)
    assert header["resolution"] == won[0].json()["session"]["resolution"]


def test_a_hand_off_turn_finishing_after_a_resolve_leaves_it_resolved(pilot):
    """The gate's hand-off lands after an agent resolved the session mid-turn."""
    from service.auth import Caller
    from service.domain.conversation import hand_off_after_turn
    from tasks.schemas import TurnRequest, TurnResult

    client, app_pilot = pilot
    session = answered_session(client, "c-81")
    request = TurnRequest(
        session_id=session, customer_id="c-81", message="a person please", slots={"tenant": "acme"}
    )
    assert post(client, f"/v1/sessions/{session}/resolve", "lead", note="called").status_code == 200
    hand_off_after_turn(
        app_pilot,
        request,
        TurnResult(session_id=session, answer="", verdict="handoff", handoff=True),
        Caller("widget", "acme"),
    )
    header = app_pilot.store.session("acme", session)
    assert (header["status"], header["resolution"]) == ("resolved", "called")
    assert client.get("/v1/handoffs", headers=auth("ana")).json()["total"] == 0


def test_a_stale_writer_never_writes_an_old_header_back(pilot):
    """The idle sweep read the session, an agent resolved it, then the sweep recorded its
    write: the resolution stays, and so does every racing reply and resolve's outcome."""
    from service.idle_sessions import mark_remembered

    client, app_pilot = pilot
    session = handed_off(client)
    stale = app_pilot.store.session("acme", session)
    post(client, f"/v1/handoffs/{session}/take", "ana")
    assert post(client, f"/v1/sessions/{session}/resolve", "ana", note="fixed").status_code == 200
    mark_remembered(app_pilot, stale, time.time())
    header = app_pilot.store.session("acme", session)
    assert (header["status"], header["resolution"]) == ("resolved", "fixed")

    racing = handed_off(client)
    post(client, f"/v1/handoffs/{racing}/take", "ana")
    calls = [("agent-messages", {"message": f"reply {n}"}) for n in range(8)] + [
        ("resolve", {"note": "racing"})
    ]
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda c: post(client, f"/v1/sessions/{racing}/{c[0]}", "ana", **c[1]), calls))
    header = app_pilot.store.session("acme", racing)
    assert (header["status"], header["resolution"]) == ("resolved", "racing")
    assert post(client, f"/v1/sessions/{racing}/messages", "widget", message="hello?").status_code == 409


def test_a_suggested_reply_cites_only_what_the_agents_key_may_read(settings, example_kb, tmp_path):
    with (
        pilot_over_own_store(settings, example_kb, tmp_path / "data", *KEYS, roles="evidence") as (
            app,
            _,
        ),
        TestClient(app) as client,
    ):
        suggestions_follow_the_keys_slots(client)


def suggestions_follow_the_keys_slots(client) -> None:
    session = post(client, "/v1/sessions", "backend", customer_id="c-90").json()["session_id"]
    asked = post(
        client,
        f"/v1/sessions/{session}/messages",
        "backend",
        message="Which reason code do I use for a goodwill refund override?",
    ).json()
    assert asked["verdict"] != "answered"  # the runbook is internal: not for the customer
    post(client, f"/v1/sessions/{session}/handoff", "backend", reason="needs an exception")
    senior = client.get(f"/v1/handoffs/{session}", headers=auth("senior")).json()
    suggestion = senior["suggestion"]
    assert suggestion is not None and suggestion["verdict"] == "answered"
    assert [c["source_id"] for c in suggestion["citations"]] == ["internal/runbook-refund-override.md"]
    assert "OVR-9" in suggestion["answer"]
    ana = client.get(f"/v1/handoffs/{session}", headers=auth("ana")).json()
    cited = [c["source_id"] for c in (ana["suggestion"] or {}).get("citations", [])]
    assert not any(c.startswith("internal/") for c in cited)  # public slots: never the runbook
    # nothing was stored or sent: the customer's question and the hand-off line only
    assert [t.get("from") for t in senior["turns"]] == [None, None]
    assert ana["customer"] == "c-90" and ana["memories"] == []


def test_memories_keep_their_answers_reach_for_every_reader(settings, example_kb, tmp_path):
    """An internal session's answer, remembered by the idle sweep, is read by a senior agent;
    a public agent and the customer's public turns never read it (filtered in the store)."""
    with (
        pilot_over_own_store(settings, example_kb, tmp_path / "data", *KEYS, roles="evidence") as (
            app,
            _,
        ),
        TestClient(app) as client,
    ):
        pilot_context = app.state.pilot
        inside = post(client, "/v1/sessions", "intranet", customer_id="c-5").json()["session_id"]
        asked = post(
            client,
            f"/v1/sessions/{inside}/messages",
            "intranet",
            message="Which reason code do I use for a goodwill refund override?",
        ).json()
        assert asked["verdict"] == "answered" and "OVR-9" in asked["answer"], asked
        assert close_idle_sessions(pilot_context, now=time.time() + 86_400) == [inside]

        outside = post(client, "/v1/sessions", "backend", customer_id="c-5").json()["session_id"]
        post(client, f"/v1/sessions/{outside}/messages", "backend", message="Hello, my refund?")
        post(client, f"/v1/sessions/{outside}/handoff", "backend", reason="wants a person")
        public = client.get(f"/v1/handoffs/{outside}", headers=auth("ana")).json()
        assert public["memories"] == [] and "OVR-9" not in json.dumps(public)
        senior = client.get(f"/v1/handoffs/{outside}", headers=auth("senior")).json()
        assert [m["session_id"] for m in senior["memories"]] == [inside]
        assert "OVR-9" in senior["memories"][0]["resolution"]

        memory, scope = pilot_context.memory, Scope("c-5", "acme")
        assert memory.recall(scope, "refund override", slots={"access_level": "public"}) == []
        recalled = memory.recall(scope, "refund override", slots={"access_level": "internal"})
        assert [m.session_id for m in recalled] == [inside]


def test_memories_written_before_they_kept_their_reach_get_it_from_their_turns(pilot):
    from storage.memory import MEMORIES

    client, pilot_context = pilot
    memory, scope = pilot_context.memory, Scope("c-6", "acme")
    inside = post(client, "/v1/sessions", "intranet", customer_id="c-6").json()["session_id"]
    post(client, f"/v1/sessions/{inside}/messages", "intranet", message="How long does a refund take?")
    old = {"session_id": inside, "summary": "refund", "resolution": "answered: OVR-9", "sources": []}
    memory._write(MEMORIES, scope, scope.key("memory", inside), "refund", old)  # as stored before
    gone = {**old, "session_id": "gone-session"}  # its turns were forgotten: the highest level
    memory._write(MEMORIES, scope, scope.key("memory", "gone-session"), "refund", gone)
    assert memory.keep_reach_of_old_memories() == 2
    assert memory.memories(scope, slots={"access_level": "public"}) == []
    assert {m.session_id for m in memory.memories(scope, slots={"access_level": "internal"})} == {
        inside,
        "gone-session",
    }
    assert len(memory.memories(scope)) == 2  # nothing lost
    assert memory.keep_reach_of_old_memories() == 0
