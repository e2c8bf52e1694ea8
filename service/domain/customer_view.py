"""What a customer reads of their own conversation: the session header without the owner
hash, the resolution note, the resolving person or the memory bookkeeping (staff read those
in /v1/handoffs), the name the person who joined chose to show, and each turn without what
only staff read (the staff key that replied, the enforced slots, the claim, how sure the
decision was, a reply's reach).

Usage::

    view = customer_view(pilot, header)          # a SessionPublic
    detail = session_detail(pilot, who, session_id)
"""

from __future__ import annotations

from collections.abc import Mapping

from service.auth import Caller
from service.context import PilotContext, owned_session
from service.domain.records import SessionHeader
from service.domain.session_slots import turn_slots
from service.domain.staff_reads import with_cited_pages
from service.domain.views import FeedbackMark, SessionDetail, SessionPublic, TurnPublic
from storage.memory import Scope
from tasks.state import search_slots


def customer_view(pilot: PilotContext, header: SessionHeader) -> SessionPublic:
    """A session header as its customer sees it (:class:`SessionPublic`: none of the staff's
    fields), and once a person took it the name they chose to show (``agent_name``: the staff
    key's ``display_name``, None without one: "a person from our support team")."""
    view = SessionPublic.model_validate(header)
    if header.get("taken_at"):
        view.agent_name = display_name(pilot, header["tenant"], header.get("taken_by", ""))
    return view


def display_name(pilot: PilotContext, tenant: str, key_name: str) -> str | None:
    """The name a staff key shows customers (its ``display_name``), or None."""
    key = next(
        (k for k in pilot.settings.pilot.api_keys if k.name == key_name and k.tenant == tenant), None
    )
    return key.display_name if key is not None else None


def customer_turn(turn: Mapping[str, object]) -> TurnPublic:
    """A turn without the fields only staff read (:class:`TurnPublic`)."""
    return TurnPublic.model_validate(turn)


def session_detail(pilot: PilotContext, who: Caller, session_id: str) -> SessionDetail:
    """The customer's conversation: its header, its turns (each reply's sources as the pages
    the turns' slots may read now: a reload, another page of the site) and their marks."""
    pilot.limits.spend("reads", who)  # a widget visitor's only
    header = owned_session(pilot, who, session_id)
    turns = pilot.memory.session_turns(Scope(header["customer_id"], who.tenant), session_id)
    marks = pilot.store.feedback(who.tenant, session_id)
    slots = search_slots(turn_slots(header, who), header["customer_id"])  # as the turns searched
    return SessionDetail(
        session=customer_view(pilot, header),
        turns=[customer_turn(t) for t in with_cited_pages(pilot.runtime, slots, turns)],
        feedback=[FeedbackMark.model_validate(m) for m in marks],
    )
