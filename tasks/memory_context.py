"""What a turn reads from and writes to the customer's memory.

Usage::

    index = claim_turn(runtime.memory, request)             # before any work: the turn's slot
    context = load_context(runtime.memory, request, index)  # history, entities, memories
    save_entities(runtime.memory, request, context)
    save_result(runtime.memory, request, context, result)   # after
    close_session(runtime.memory, scope, session_id)        # long-term memory of a resolution
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from storage.memory import (
    WAITING_FOR_AGENT,
    MemoryStore,
    RememberedCase,
    RememberedEntity,
    Scope,
    StoredTurn,
)
from storage.retrieval.filters import widest_reach
from tasks.entities import extract
from tasks.schemas import HistoryTurn, TurnRequest, TurnResult


@dataclass
class MemoryContext:
    scope: Scope | None
    history: list[HistoryTurn] = field(default_factory=list)
    entities: list[RememberedEntity] = field(default_factory=list)
    memories: list[RememberedCase] = field(default_factory=list)
    turn_index: int = 0


def scope_of(request: TurnRequest) -> Scope | None:
    if not request.customer_id:
        return None
    return Scope(request.customer_id, request.slots.get("tenant", ""))


def claim_turn(memory: MemoryStore | None, request: TurnRequest) -> int:
    """The turn's index, claimed once before any work: the user's message is stored there as
    ``pending``, so a failure loses nothing and a late turn can only finish its own slot."""
    scope = scope_of(request)
    if memory is None or scope is None:
        return len(request.history)
    return memory.claim_turn(
        scope, request.session_id, {"user": request.message, "slots": request.slots}
    )


def load_context(memory: MemoryStore | None, request: TurnRequest, turn_index: int) -> MemoryContext:
    """History (finished turns before this one), entities and the long-term memories the
    turn's enforced slots may read."""
    scope = scope_of(request)
    if memory is None or scope is None:
        return MemoryContext(scope=None, history=list(request.history), turn_index=turn_index)
    turns = memory.session_turns(scope, request.session_id)
    history = list(request.history) or [
        HistoryTurn(
            user=t["user"],
            answer=t.get("answer", ""),
            sources=t.get("citations", []),
            offered_handoff=bool(t.get("offers_handoff")),
        )
        for t in turns
        if t.get("status") == "done" and t["turn_index"] < turn_index
    ]
    return MemoryContext(
        scope=scope,
        history=history,
        entities=memory.entities(scope),
        memories=memory.recall(scope, request.message, limit=2, slots=request.slots),
        turn_index=turn_index,
    )


def save_entities(memory: MemoryStore | None, request: TurnRequest, context: MemoryContext) -> None:
    """The entities the message names, into the customer's entity memory."""
    if memory is None or context.scope is None:
        return
    remember_entities(memory, context.scope, request.session_id, context.turn_index, request.message)


def remember_entities(
    memory: MemoryStore, scope: Scope, session_id: str, turn_index: int, message: str
) -> None:
    """The entities ``message`` names, into the customer's entity memory, sourced to its turn."""
    memory.upsert_entities(scope, extract(message), source=f"{session_id}#{turn_index}")


def assurance(result: TurnResult) -> dict[str, Any]:
    """How sure an answer was, for the lead's verified resolutions: the decision's probability
    that its page answers, and whether the words are a model's draft (kept only after the
    support check passed it) or the page's own quoted sentences; every answer is one of the
    two. Empty for other verdicts.

    >>> assurance(TurnResult(session_id="s", answer="", verdict="idk"))
    {}
    """
    if result.verdict != "answered":
        return {}
    evidence = result.trace.last_evidence()
    verify = next((s for s in reversed(result.trace.steps) if s.name == "verify"), None)
    return {
        "probability": round(evidence.probability, 4) if evidence else None,
        "drafted": bool(verify and verify.detail.get("kept_draft")),
    }


def save_result(
    memory: MemoryStore | None, request: TurnRequest, context: MemoryContext, result: TurnResult
) -> None:
    if memory is None or context.scope is None:
        return
    memory.add_turn(
        context.scope,
        request.session_id,
        context.turn_index,
        {
            "user": request.message,
            "slots": request.slots,
            "status": "error" if result.verdict == "error" else "done",
            "answer": result.answer,
            "verdict": result.verdict,
            "citations": [c.source_id for c in result.citations],
            "kind": result.kind,
            "offers_handoff": result.offers_handoff,
            **assurance(result),
            "llm_calls": result.trace.llm_calls,
            **({"failure": result.failure.model_dump()} if result.failure else {}),
        },
    )


def save_turn_result(
    memory: MemoryStore | None, request: TurnRequest, turn_index: int, result: TurnResult
) -> None:
    """Store ``result`` in the turn's claimed slot (``done``, or ``error`` with its failure);
    a second call overwrites the first (the pilot's hand-off limit rewrites a turn)."""
    save_result(memory, request, MemoryContext(scope=scope_of(request), turn_index=turn_index), result)


def messages_waiting(
    turns: Sequence[StoredTurn], counted: Callable[[StoredTurn], bool] = lambda _turn: True
) -> int:
    """The customer's messages of a session that wait for a person: those since a person last
    replied (the pilot caps them per session), only those ``counted`` says (the queue counts
    the ones a person has to answer: :func:`to_answer`).

    >>> messages_waiting([{"status": "waiting_for_agent"}, {"from": "agent"},
    ...                       {"status": "waiting_for_agent"}, {"status": "waiting_for_agent"}])
    2
    """
    count = 0
    for turn in turns:
        waits = turn.get("status") == WAITING_FOR_AGENT and counted(turn)
        count = 0 if turn.get("from") == "agent" else count + waits
    return count


def to_answer(turn: StoredTurn) -> bool:
    """Whether a message to a person needs their answer: not one that only leaves an email or
    a number, thanks or says goodbye (a "Hello?" does: the customer is waiting).

    >>> to_answer({"user": "jo@example.com", "kind": "contact"}), to_answer({"user": "Hello?"})
    (False, True)
    """
    return turn.get("kind") not in ("contact", "courtesy", "goodbye")


def close_session(
    memory: MemoryStore | None, scope: Scope | None, session_id: str, resolution: str = ""
) -> bool:
    """Write a long-term memory when the session ended answered or handed off, or when a person
    resolved it (``resolution``: their note); it keeps the reach of the slots its turns ran
    under, so only readers whose slots reach as far read it."""
    if memory is None or scope is None:
        return False
    stored = memory.session_turns(scope, session_id)
    asked = [t for t in stored if t.get("user")]
    turns = [t for t in stored if t.get("status") == "done"]
    resolved = [t for t in turns if t.get("verdict") in ("answered", "handoff")]
    if not asked or not (resolved or resolution):
        return False
    entities = ", ".join(f"{e.type} {e.value}" for t in asked for e in extract(t["user"]))
    summary = asked[0]["user"] + (f" ({entities})" if entities else "")
    if resolution:
        outcome = f"resolved by our support team: {resolution[:400]}"
    else:
        outcome = f"{resolved[-1]['verdict']}: {resolved[-1].get('answer', '')[:400]}"
    memory.remember(
        scope,
        session_id,
        summary=summary[:500],
        resolution=outcome,
        sources=sorted({s for t in resolved for s in t.get("citations", [])}),
        read_as=widest_reach(
            memory.rules, [t["slots"] for t in stored if isinstance(t.get("slots"), dict)]
        ),
    )
    return True
