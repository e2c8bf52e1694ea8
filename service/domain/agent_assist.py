"""Agent assist: a suggested reply to the question that still waits in a handed-off
conversation, for the person who works it.

The question is :func:`tasks.question_behind.open_question`'s: the one that led to the
hand-off (a bare "yes" to the offer of a person, thanks or a request for a person are never
it; "My refund has not arrived. I want a human!" asks about the refund), or, once a person
replied, the first the customer wrote after that reply. The suggestion is the answer
decision's own (``agents/turn.run_turn``) under the *agent's* enforced slots (so it may cite
internal articles the agent can read, and never one the agent cannot), with the conversation
before that message as history. It is run without a customer: nothing is stored, no memory is
read or written, and it is never sent: the desk shows it marked as a suggestion and a person
decides. With a model configured, the model phrases it through the same support check as
customer answers.

Usage::

    suggestion = suggested_reply(runtime, turns, staff_slots(who), session_id)
    suggestion.answer, suggestion.citations     # or None: nothing to suggest
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agents.turn import run_turn
from service.domain.views import SuggestedReply
from tasks.message_kind import load_message_kinds
from tasks.question_behind import open_question, pages_reader
from tasks.schemas import HistoryTurn, TurnRequest

if TYPE_CHECKING:
    from agents.runtime import TurnRuntime
    from storage.memory import StoredTurn


def history_before(turns: Sequence[StoredTurn], position: int) -> list[HistoryTurn]:
    """The conversation before ``position``, as the turn's history (answers and their pages)."""
    history = []
    for turn in turns[:position]:
        if turn.get("user"):
            history.append(
                HistoryTurn(
                    user=str(turn["user"]),
                    answer=str(turn.get("answer") or ""),
                    sources=list(turn.get("citations") or []),
                )
            )
    return history


def suggested_reply(
    runtime: TurnRuntime, turns: Sequence[StoredTurn], slots: dict[str, str], session_id: str
) -> SuggestedReply | None:
    """The decision's reply to the conversation's open question under ``slots``, or None
    when there is none or the decision does not answer it (a refusal or a hand-off is no reply
    to suggest)."""
    found = open_question(turns, pages_reader(load_message_kinds(runtime.scorer.encoders)))
    if found is None:
        return None
    position, message = found.position, found.question
    result = run_turn(
        TurnRequest(
            session_id=f"assist-{session_id}"[:200],
            message=message,
            slots=slots,
            history=history_before(turns, position),
        ),
        runtime,
    )
    if result.verdict not in ("answered", "suggest"):
        return None
    return SuggestedReply(
        for_turn=int(turns[position].get("turn_index", position)),
        message=str(turns[position]["user"]),
        asked=message,
        answer=result.answer,
        verdict=result.verdict,
        citations=list(result.citations),
    )
