"""The customer's verdicts on a conversation: a thumbs up or down on one reply of the
assistant's (any reply of its own: an answer, "I could not find this", a hand-off line; not
a person's reply, nor a message that waits), and the closing question "Did we solve your
problem today?", answered (a later answer replaces the earlier) or skipped (kept, so the
report says how many were asked). A resolved conversation takes no more marks; the closing
question is refused before the conversation had any reply.

Usage::

    mark = rate_reply(pilot, who, session_id, turn_index=0, rating="up", comment="clear")
    answer = answer_closing(pilot, who, session_id, solved=True)
    skipped = skip_closing(pilot, who, session_id)
"""

from __future__ import annotations

import time
from typing import Literal

from service.auth import Caller
from service.context import PilotContext, found, owned_session
from service.domain.records import SessionFields, SessionHeader, StoredMark
from service.domain.session_state import move
from service.domain.views import SatisfactionAnswer
from service.errors import ApiError
from service.outcome_upkeep import touched
from storage.memory import Scope
from tasks.polite_replies import closing_reply


def rate_reply(
    pilot: PilotContext,
    who: Caller,
    session_id: str,
    turn_index: int,
    rating: Literal["up", "down"],
    comment: str,
) -> StoredMark:
    """The customer's mark on one reply of the assistant's: 404 naming ``turn_index`` for a
    turn the session lacks, 409 for one with no reply of the assistant's to rate."""
    header = owned_session(pilot, who, session_id)
    move(header, "feedback", "customer", "")  # a resolved conversation takes no more ratings
    pilot.limits.spend("feedback", who)
    turns = pilot.memory.session_turns(Scope(header["customer_id"], who.tenant), session_id)
    turn = next((t for t in turns if t["turn_index"] == turn_index), None)
    if turn is None:
        raise ApiError(404, "unknown_turn", f"session has no turn {turn_index}", field="turn_index")
    if not turn.get("answer") or turn.get("from") == "agent":
        raise ApiError(
            409,
            "not_rateable",
            f"turn {turn_index} has no reply of the assistant to rate",
            field="turn_index",
        )
    mark = pilot.store.add_feedback(who.tenant, session_id, turn_index, rating, comment)
    touched(pilot, who.tenant, session_id)
    return mark


def closing_question_header(pilot: PilotContext, who: Caller, session_id: str) -> SessionHeader:
    """The session whose customer answers (or skips) the closing question: owned by ``who``,
    the move allowed, the spend counted; 409 before the conversation had any reply."""
    header = owned_session(pilot, who, session_id)
    move(header, "satisfaction", "customer", "")
    pilot.limits.spend("feedback", who)
    turns = pilot.memory.session_turns(Scope(header["customer_id"], who.tenant), session_id)
    if not any(t.get("answer") for t in turns):
        raise ApiError(409, "nothing_to_rate", "this conversation has no reply yet to rate")
    return header


def answer_closing(
    pilot: PilotContext, who: Caller, session_id: str, solved: bool
) -> SatisfactionAnswer:
    """The customer's one closing answer (a later one replaces it: ``replaced``), and what
    they read next (a "no" offers a person)."""
    closing_question_header(pilot, who, session_id)
    now = time.time()
    before: dict[str, bool | None] = {}
    reply = closing_reply(pilot.settings.messages, solved)

    def answer(current: SessionHeader, _changes: SessionFields) -> SessionFields:
        before["solved"] = current.get("csat_solved")
        return {"csat_solved": solved, "csat_at": now, "csat_skipped_at": None}

    found(pilot.store.apply(who.tenant, session_id, "satisfaction", "customer", "", answer), session_id)
    touched(pilot, who.tenant, session_id)
    return SatisfactionAnswer(
        solved=solved,
        ts=now,
        replaced=before.get("solved") is not None,
        reply=reply.answer,
        offers_person=reply.offers_person,
    )


def skip_closing(pilot: PilotContext, who: Caller, session_id: str) -> SatisfactionAnswer:
    """The closing question closed unanswered: kept, unless an answer was given before (the
    answer says it, ``solved``); an answer given after replaces the skip."""
    closing_question_header(pilot, who, session_id)
    now = time.time()

    def skip(current: SessionHeader, _changes: SessionFields) -> SessionFields:
        return {} if current.get("csat_solved") is not None else {"csat_skipped_at": now}

    header = found(
        pilot.store.apply(who.tenant, session_id, "satisfaction", "customer", "", skip), session_id
    )
    touched(pilot, who.tenant, session_id)
    solved = header.get("csat_solved")  # an answer given before stays
    return SatisfactionAnswer(solved=solved, ts=now, replaced=False, skipped=solved is None)
