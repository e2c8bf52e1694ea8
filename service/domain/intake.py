"""What a customer sends before a turn runs: a new session (its slots and customer checked,
:mod:`service.domain.session_slots`) and a message, checked in the order a client is told
why (409 for a resolved session before anything is counted, 422 for slots the rules now
refuse, the message's bytes, then the turn), kept for the person when the conversation waits
for one, else made the turn's request.

Usage::

    opened = new_session(pilot, who, customer_id=None, slots={})     # a NewSessionView
    accepted = accept_message(pilot, who, session_id, "Where is my refund?")
    # a TurnRequest to run, or the TurnResult of a message kept for a person
"""

from __future__ import annotations

from service.auth import Caller
from service.context import PilotContext, found, owned_session
from service.domain.conversation import open_session, wait_for_agent
from service.domain.session_slots import accepted_slots, check_new_session, turn_slots
from service.domain.session_state import move, waiting_for_a_person
from service.domain.views import NewSessionView
from service.outcome_upkeep import touched
from tasks.schemas import TurnRequest, TurnResult


def new_session(
    pilot: PilotContext, who: Caller, customer_id: str | None, slots: dict[str, str]
) -> NewSessionView:
    """A new session of the caller's, once its request passes the slot rules."""
    check_new_session(pilot, who, customer_id, slots)
    header = open_session(pilot, who, customer_id, slots)
    return NewSessionView(
        session_id=header["session_id"], customer_id=header["customer_id"], slots=header["slots"]
    )


def accept_message(
    pilot: PilotContext, who: Caller, session_id: str, message: str
) -> TurnRequest | TurnResult:
    """The turn ``message`` asks for, or, in a conversation waiting for a person, the result
    of keeping it for them."""
    header = owned_session(pilot, who, session_id)
    move(header, "message", "customer", "")  # 409 for a resolved session, before any count
    accepted_slots(pilot, turn_slots(header, who))  # 422 for slots the rules now refuse
    pilot.limits.spend("message_bytes", who, len(message.encode()))
    header = found(pilot.store.reopen(who.tenant, session_id, "message", "customer"), session_id)
    if waiting_for_a_person(header):
        result = wait_for_agent(pilot, who, header, message)
        touched(pilot, who.tenant, session_id)
        return result
    pilot.limits.spend("turns", who)
    return TurnRequest(
        session_id=session_id,
        customer_id=header["customer_id"],
        message=message,
        slots=turn_slots(header, who),
    )
