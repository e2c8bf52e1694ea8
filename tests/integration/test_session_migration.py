"""Headers written before ``status`` was the one record of a hand-off carried a ``handoff``
flag; the pilot's start gives each its status and drops the flag, losing nothing else."""

from __future__ import annotations

import pytest

from service.domain.views import SessionStaff
from service.stores.pilot_store import SESSIONS, PilotStore
from storage.qdrant.edge_store import EdgeStore

pytestmark = pytest.mark.integration

LEGACY = {
    # written before statuses existed: the flag alone said it
    "waiting": {"handoff": True, "handoff_at": 5.0, "handoff_reason": "asked for a person"},
    "open": {"handoff": False},
    # written with both: the status wins
    "resolved": {"handoff": True, "handoff_at": 5.0, "status": "resolved", "resolution": "sent"},
}


@pytest.fixture
def pilot(tmp_path, example_kb):
    store = EdgeStore(tmp_path / "qdrant")
    yield PilotStore(store, example_kb.encoders)
    store.close()


def write_legacy(pilot: PilotStore) -> None:
    for name, fields in LEGACY.items():
        header = {
            "session_id": name,
            "tenant": "acme",
            "customer_id": f"c-{name}",
            "owner": "o",
            "slots": {"tier": "pro"},
            "created": 1.0,
            "rev": f"rev-{name}",
            **fields,
        }
        pilot.store.upsert(SESSIONS, [pilot._point(f"acme/{name}", "session", header)])


def test_the_start_migration_gives_each_header_its_status_and_drops_the_flag(pilot):
    write_legacy(pilot)
    pilot.create_session("acme", "new", "c-new", "o", {})  # written today: no flag, untouched
    new_rev = pilot.session("acme", "new")["rev"]

    assert pilot.drop_handoff_flags() == 3
    headers = {h["session_id"]: h for h in pilot.sessions("acme")}
    assert {k: h["status"] for k, h in headers.items()} == {
        "waiting": "handoff",
        "open": "open",
        "resolved": "resolved",
        "new": "open",
    }
    assert not any("handoff" in h for h in headers.values())
    # nothing else is lost, and the write is a new revision built on the one read
    waiting = headers["waiting"]
    assert (waiting["handoff_reason"], waiting["slots"], waiting["customer_id"]) == (
        "asked for a person",
        {"tier": "pro"},
        "c-waiting",
    )
    assert waiting["rev"] != "rev-waiting" and waiting["revs"][0] == "rev-waiting"
    assert headers["resolved"]["resolution"] == "sent"
    assert headers["new"]["rev"] == new_rev
    # the queue reads the status alone; clients still read a derived flag
    assert [h["session_id"] for h in pilot.handoffs("acme")] == ["waiting"]
    views = {k: SessionStaff.model_validate(h).model_dump() for k, h in headers.items()}
    assert {k: v["handoff"] for k, v in views.items()} == {
        "waiting": True,
        "open": False,
        "resolved": True,
        "new": False,
    }

    assert pilot.drop_handoff_flags() == 0  # a second start finds nothing to migrate


def test_a_header_in_the_old_format_written_after_the_start_is_still_with_a_person(
    settings, example_kb, tmp_path
):
    """A restore, or a worker still on the version before, writes a hand-off as a flag with
    no status after the start's migration: every read reads it as waiting for a person, so
    the assistant does not answer the customer again, and the desk lists it."""
    from fastapi.testclient import TestClient

    from tests.helpers import acme_team, bearer, pilot_over_own_store

    with (
        pilot_over_own_store(
            settings, example_kb, tmp_path / "data", *acme_team(), roles="evidence"
        ) as (app, _),
        TestClient(app) as client,
    ):
        session = client.post(
            "/v1/sessions", json={"customer_id": "c-1"}, headers=bearer("backend")
        ).json()["session_id"]
        pilot = app.state.pilot
        header = pilot.store.session("acme", session)
        old = {k: v for k, v in header.items() if k != "status"}
        old.update(handoff=True, handoff_at=5.0, handoff_reason="asked for a person")
        pilot.store.store.upsert(SESSIONS, [pilot.store._point(f"acme/{session}", "session", old)])

        reply = client.post(
            f"/v1/sessions/{session}/messages",
            json={"message": "How long does a refund take?"},
            headers=bearer("backend"),
        ).json()
        assert reply["verdict"] == "handoff" and reply["handoff"], reply  # a person's, not ours
        assert "5 to 7 business days" not in reply["answer"]
        read = client.get(f"/v1/sessions/{session}", headers=bearer("backend")).json()
        assert read["session"]["status"] == "handoff"
        queue = client.get("/v1/handoffs", headers=bearer("ana")).json()
        assert [r["session"]["session_id"] for r in queue["handoffs"]] == [session]
        assert client.post(f"/v1/handoffs/{session}/take", headers=bearer("ana")).status_code == 200
        stored = pilot.store.store.scroll(SESSIONS, None)
        [written] = [r.payload for r in stored if r.payload["session_id"] == session]
        assert written["status"] == "handoff" and "handoff" not in written  # now the new format


def test_a_stored_record_that_does_not_parse_names_itself(pilot):
    """A header or a mark that does not fit its definition fails where it is read, naming the
    record and the field, never as a KeyError calls later; an old header that names its
    ``key`` instead of an ``owner`` still reads."""
    from service.stores.pilot_store import FEEDBACK
    from storage.records import BrokenRecord

    broken = {"session_id": "b1", "tenant": "acme", "slots": "pro", "created": 1.0}
    pilot.store.upsert(SESSIONS, [pilot._point("acme/b1", "session", broken)])
    with pytest.raises(BrokenRecord, match=r"pilot_sessions acme/b1 .*customer_id: Field required"):
        pilot.session("acme", "b1")
    with pytest.raises(BrokenRecord, match=r"slots: Input should be a valid dictionary"):
        pilot.sessions("acme")

    mark = {"tenant": "acme", "session_id": "b1", "turn_index": 0, "rating": "meh", "ts": 1.0}
    pilot.store.upsert(FEEDBACK, [pilot._point("acme/b1/0", "", mark)])
    with pytest.raises(BrokenRecord, match=r"pilot_feedback acme/b1/0 .*rating"):
        pilot.feedback("acme", "b1")

    old = {"session_id": "k1", "tenant": "acme", "customer_id": "c", "key": "web", "slots": {}}
    pilot.store.upsert(SESSIONS, [pilot._point("acme/k1", "session", {**old, "created": 2})])
    header = pilot.session("acme", "k1")
    assert header is not None and header["key"] == "web" and header["created"] == 2.0
    assert header["status"] == "open"


def test_a_stored_outcome_that_does_not_parse_names_itself(pilot, example_kb):
    """An outcome the report would read with a label no version writes, or without the day
    it was counted under, fails where it is read, naming the conversation and the field."""
    import uuid

    from service.stores.outcome_store import OUTCOMES, OutcomeStore
    from storage.qdrant.store import PointData
    from storage.records import BrokenRecord

    outcomes = OutcomeStore(pilot.store, example_kb.encoders)
    fields = {"tenant": "acme", "customer_id": "c", "why": "", "questions": 1}
    times = {"started": 1.0, "last_activity": 2.0}
    for session, broken in (
        ("o1", {"day": "2026-12-01", "label": "solved-ish", **times}),
        ("o2", {"label": "assumed", **times}),
    ):
        point = PointData(
            id=str(uuid.uuid4()),
            dense=outcomes.vector,
            payload={"session_id": session, **fields, **broken},
        )
        pilot.store.upsert(OUTCOMES, [point])
    with pytest.raises(BrokenRecord, match=r"pilot_outcomes acme/o1 .*label: Input should be"):
        outcomes.get("acme", "o1")
    with pytest.raises(BrokenRecord, match=r"pilot_outcomes acme/o2 .*day: Field required"):
        outcomes.get("acme", "o2")
