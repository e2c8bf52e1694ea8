"""Each record's family: what a customer and what staff read are models of the stored record's
own fields (service/domain/records.py, storage/memory.py), so a field renamed in the store
cannot silently vanish from a view, and no reader is handed the keys that own a session."""

from __future__ import annotations

import pytest

from service.domain.records import SessionHeader, StoredMark
from service.domain.views import (
    FeedbackMark,
    SessionPublic,
    SessionStaff,
    TurnPublic,
    TurnStaff,
)
from storage.memory import StoredTurn

DERIVED = {"agent_name"}  # the staff key's display name, looked up when a customer reads it
NEVER_SHOWN = {"owner", "key", "rev", "revs"}  # the keys that own a session, its revisions


def stored_names(model) -> set[str]:
    return {field.alias or name for name, field in model.model_fields.items()}


@pytest.mark.parametrize(
    ("view", "stored"),
    [
        (SessionPublic, SessionHeader),
        (SessionStaff, SessionHeader),
        (TurnPublic, StoredTurn),
        (TurnStaff, StoredTurn),
        (FeedbackMark, StoredMark),
    ],
)
def test_every_field_a_reader_sees_is_a_stored_field(view, stored):
    assert stored_names(view) - DERIVED <= set(stored.__annotations__)


def test_staff_read_more_than_customers_and_nobody_reads_the_owning_keys():
    assert stored_names(SessionPublic) < stored_names(SessionStaff)
    assert stored_names(TurnPublic) < stored_names(TurnStaff)
    assert not NEVER_SHOWN & stored_names(SessionStaff)


def test_a_customer_never_reads_who_replied_or_under_which_slots():
    stored: StoredTurn = {
        "turn_index": 2,
        "user": "Where is my refund?",
        "answer": "It was sent on Monday.",
        "from": "agent",
        "agent": "ana",
        "slots": {"tier": "enterprise"},
        "probability": 0.91,
        "claim": "c1",
        "failure": {"kind": "bug"},
    }
    customer = TurnPublic.model_validate(stored).model_dump(by_alias=True, exclude_unset=True)
    staff = TurnStaff.model_validate(stored).model_dump(by_alias=True, exclude_unset=True)
    assert customer == {
        "turn_index": 2,
        "user": "Where is my refund?",
        "answer": "It was sent on Monday.",
        "from": "agent",
    }
    assert staff["agent"] == "ana" and staff["slots"] == {"tier": "enterprise"}


def test_staff_read_the_session_without_its_owner_or_revisions():
    header: SessionHeader = {
        "session_id": "s1",
        "tenant": "acme",
        "customer_id": "c1",
        "owner": "hash-of-keys",
        "slots": {"tier": "pro"},
        "created": 1.0,
        "taken_by": "ana",
        "rev": "r2",
        "revs": ["r1"],
    }
    staff = SessionStaff.model_validate(header).model_dump(exclude_unset=True)
    assert staff["taken_by"] == "ana" and not {"owner", "rev", "revs"} & staff.keys()
    assert "taken_by" not in SessionPublic.model_validate(header).model_dump(exclude_unset=True)
