"""The session state machine: which verb moves which status, by whom."""

from __future__ import annotations

import pytest

from service.domain.session_state import SessionConflict, move

OPEN = {"status": "open"}
WAITING = {"status": "handoff", "handoff_at": 1.0}
RESOLVED = {"status": "resolved", "handoff_at": 1.0}


@pytest.mark.parametrize(
    ("header", "verb", "role", "changes"),
    [
        (OPEN, "hand_off", "customer", {"status": "handoff"}),
        (OPEN, "hand_off", "assistant", {"status": "handoff"}),
        (WAITING, "hand_off", "customer", {}),  # again: nothing changes
        (OPEN, "take", "agent", {"status": "handoff", "taken_by": "ana"}),
        (WAITING, "take", "agent", {"taken_by": "ana"}),
        (OPEN, "resolve", "agent", {"status": "resolved"}),
        (WAITING, "resolve", "admin", {"status": "resolved"}),
        (WAITING, "message", "customer", {}),
        ({**WAITING, "taken_by": "ana"}, "reply", "agent", {}),
        ({**WAITING, "taken_by": "ben"}, "take", "admin", {"taken_by": "ana"}),  # reassign
        (WAITING, "leave", "customer", {"status": "resolved"}),  # left for a new conversation
        ({**WAITING, "taken_by": "ana"}, "leave", "customer", {"status": "resolved"}),
    ],
)
def test_allowed_moves_change_what_they_say(header, verb, role, changes):
    assert move(header, verb, role, "ana") == changes


@pytest.mark.parametrize(
    ("header", "verb", "role", "code"),
    [
        (RESOLVED, "hand_off", "customer", "session_resolved"),
        (RESOLVED, "hand_off", "assistant", "session_resolved"),
        (RESOLVED, "message", "customer", "session_resolved"),
        (RESOLVED, "feedback", "customer", "session_resolved"),
        (RESOLVED, "resolve", "agent", "session_resolved"),
        (RESOLVED, "take", "admin", "session_resolved"),
        (RESOLVED, "remember", "sweep", "session_resolved"),
        (OPEN, "reply", "agent", "not_handed_off"),
        (WAITING, "reply", "agent", "not_taken"),
        ({**WAITING, "taken_by": "ben"}, "reply", "agent", "taken"),
        ({**WAITING, "taken_by": "ben"}, "reply", "admin", "taken"),  # an admin reassigns first
        ({**WAITING, "taken_by": "ben"}, "take", "agent", "taken"),
        ({**WAITING, "taken_by": "ben"}, "resolve", "agent", "taken"),
        (OPEN, "resolve", "customer", "wrong_role"),
        (WAITING, "take", "customer", "wrong_role"),
        (OPEN, "hand_off", "agent", "wrong_role"),
        (OPEN, "leave", "customer", "not_handed_off"),  # nothing waits for a person
        (RESOLVED, "leave", "customer", "session_resolved"),
        (WAITING, "leave", "agent", "wrong_role"),  # staff close it (resolve), never leave it
    ],
)
def test_refused_moves_name_why(header, verb, role, code):
    with pytest.raises(SessionConflict) as refused:
        move(header, verb, role, "ana")
    assert refused.value.code == code


def test_a_customer_is_told_to_start_a_new_session():
    with pytest.raises(SessionConflict, match="start a new session"):
        move(RESOLVED, "message", "customer", "")


def test_leaving_an_open_conversation_says_nothing_waits_for_a_person():
    with pytest.raises(SessionConflict) as refused:
        move(OPEN, "leave", "customer", "")
    assert refused.value.message == "this conversation does not wait for a person"
