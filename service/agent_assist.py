"""Agent assist: a suggested reply to the customer's last unanswered message, for the person
who works the conversation.

The message is the customer's last one that asks the knowledge base something (its requests
for a person left out: "My refund has not arrived. I want a human!" asks about the refund).
The suggestion is the answer decision's own (``agents/turn.run_turn``) under the *agent's*
enforced slots (so it may cite internal articles the agent can read, and never one the agent
cannot), with the conversation before that message as history. It is run without a customer:
nothing is stored, no memory is read or written, and it is never sent: the desk shows it
marked as a suggestion and a person decides. With a model configured, the model phrases it
through the same support check as customer answers.

Usage::

    suggestion = suggested_reply(runtime, turns, staff_slots(who), session_id)
    suggestion["answer"], suggestion["citations"]     # or None: nothing to suggest
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from agents.turn import run_turn
from tasks.judging import pages_question
from tasks.message_kind import load_message_kinds
from tasks.schemas import HistoryTurn, TurnRequest

if TYPE_CHECKING:
    from agents.runtime import TurnRuntime
    from storage.memory import StoredTurn

ANSWERED_BY_A_PERSON = "agent_reply"


def last_unanswered(
    turns: Sequence[StoredTurn], question_of: Callable[[str], str]
) -> tuple[int, str] | None:
    """The customer's last message that asks the pages something and that neither the
    assistant answered nor a person replied to after it: its position in ``turns`` and what
    it asks (``question_of``); None when there is none.

    >>> same = lambda text: text
    >>> last_unanswered([{"user": "Hi?", "verdict": "answered"},
    ...                  {"user": "Refund?", "verdict": "handoff"}], same)
    (1, 'Refund?')
    >>> last_unanswered([{"user": "Refund?", "verdict": "idk"},
    ...                  {"from": "agent", "answer": "Sent."}], same)
    """
    for position in range(len(turns) - 1, -1, -1):
        turn = turns[position]
        if turn.get("from") == "agent":
            return None
        question = question_of(str(turn.get("user") or ""))
        if question:
            return None if turn.get("verdict") == "answered" else (position, question)
    return None


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
) -> dict[str, object] | None:
    """The decision's reply to the last unanswered message under ``slots``, or None when it
    does not answer it (a refusal or a hand-off is no reply to suggest)."""
    kinds = load_message_kinds(runtime.scorer.encoders)
    found = last_unanswered(turns, lambda text: pages_question(text, kinds.asks_for_person))
    if found is None:
        return None
    position, message = found
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
    return {
        "for_turn": int(turns[position].get("turn_index", position)),
        "message": str(turns[position]["user"]),
        "asked": message,
        "answer": result.answer,
        "verdict": result.verdict,
        "citations": [c.model_dump() for c in result.citations],
    }
