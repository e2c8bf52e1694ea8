"""The customer's side of waiting for a person: ask for one (the session joins the queue),
leave an email so a person can answer after they left, or leave the conversation (the chat's
"New conversation"): the hand-off is closed as left by them and its memory written.

Usage::

    handed = request_person(pilot, who, session_id, "requested by the customer")
    changed = leave_contact(pilot, who, session_id, "jo@example.com")
    left = leave(pilot, who, session_id)
"""

from __future__ import annotations

from service.auth import Caller
from service.context import PilotContext, found, owned_session
from service.domain.conversation import hand_off_on_request
from service.domain.customer_view import customer_view
from service.domain.session_state import move
from service.domain.views import HandedOff, SessionChange
from service.outcome_upkeep import touched
from storage.memory import Scope
from tasks.memory_context import close_session


def request_person(pilot: PilotContext, who: Caller, session_id: str, reason: str) -> HandedOff:
    """The customer asks for a person: the session joins the tenant's hand-off queue (409 for
    a resolved session, before any count)."""
    header = owned_session(pilot, who, session_id)
    move(header, "hand_off", "customer", "")
    changed, turn_index = hand_off_on_request(pilot, who, header, reason)
    header = found(changed, session_id)
    touched(pilot, who.tenant, session_id)
    view = customer_view(pilot, header)
    return HandedOff(session=view, message=pilot.settings.messages.handoff, turn_index=turn_index)


def leave(pilot: PilotContext, who: Caller, session_id: str) -> SessionChange:
    """The customer leaves a conversation that waits for a person: closed as left by them
    (``closed_without_reply`` when no person replied), its memory written as a resolve
    writes it. 409 before any read of the turns when it does not wait."""
    header = owned_session(pilot, who, session_id)
    move(header, "leave", "customer", "")
    scope = Scope(header["customer_id"], who.tenant)
    replied = any(t.get("from") == "agent" for t in pilot.memory.session_turns(scope, session_id))
    left = found(pilot.store.leave(who.tenant, session_id, replied), session_id)
    close_session(pilot.memory, scope, session_id)
    touched(pilot, who.tenant, session_id)
    return SessionChange(session=customer_view(pilot, left))


def leave_contact(pilot: PilotContext, who: Caller, session_id: str, email: str) -> SessionChange:
    """The customer's email, kept on the session for the desk (409 for a resolved session)."""
    header = owned_session(pilot, who, session_id)
    move(header, "message", "customer", "")
    pilot.limits.spend("feedback", who)
    written = pilot.store.apply(
        who.tenant, session_id, "message", "customer", "", lambda _h, _c: {"contact_email": email}
    )
    touched(pilot, who.tenant, session_id)
    return SessionChange(session=customer_view(pilot, found(written, session_id)))
