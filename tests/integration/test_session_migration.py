"""Headers written before ``status`` was the one record of a hand-off carried a ``handoff``
flag; the pilot's start gives each its status and drops the flag, losing nothing else."""

from __future__ import annotations

import pytest

from service.pilot_store import SESSIONS, PilotStore
from service.records import SessionView
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
    views = {k: SessionView(**h).model_dump() for k, h in headers.items()}
    assert {k: v["handoff"] for k, v in views.items()} == {
        "waiting": True,
        "open": False,
        "resolved": True,
        "new": False,
    }

    assert pilot.drop_handoff_flags() == 0  # a second start finds nothing to migrate
