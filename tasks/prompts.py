"""What each role's task description is filled with: the turn's state rendered as prompt text.

Usage::

    inputs = role_inputs("judge", state)     # {"question": ..., "passages": "[1] Refunds: ..."}
    task_inputs("respond")                   # {"question", "passages", "revision"}
"""

from __future__ import annotations

from tasks.schemas import Passage, TurnRequest
from tasks.state import TurnState

PROMPT_PASSAGES = 3
PROMPT_CHARS = 450


def render_passages(passages: list[Passage]) -> str:
    """The passages as the judge and responder see them: numbered, trimmed."""
    return (
        "\n".join(f"[{p.pid}] {p.title}: {p.text[:PROMPT_CHARS]}" for p in passages[:PROMPT_PASSAGES])
        or "(no passages)"
    )


def render_history(state: TurnState) -> str:
    lines = [f"Customer: {t.user}\nAssistant: {t.answer[:300]}" for t in state.history[-3:]]
    return "\n".join(lines) or "(none)"


def render_entities(state: TurnState) -> str:
    lines = [f"- {e.type}: {e.value}" for e in state.entities[:8]]
    lines += [f"- earlier: {m.summary[:120]} -> {m.resolution[:160]}" for m in state.memories]
    return "\n".join(lines) or "(none)"


def role_inputs(task: str, state: TurnState) -> dict[str, str]:
    """What a role's task description is filled with (``kickoff(inputs=...)``)."""
    if task == "reformulate":
        return {
            "history": render_history(state),
            "entities": render_entities(state),
            "message": state.message,
            "rewrite_hint": f"Hint: {state.hint}" if state.hint else "",
        }
    if task == "retrieve":  # also what agents added to the retrieval step are given
        return {
            "queries": "; ".join(dict.fromkeys([state.message, *state.queries])),
            "question": state.question,
            "message": state.message,
        }
    if task in ("judge", "respond"):
        inputs = {"question": state.question, "passages": render_passages(state.passages)}
        if task == "respond":
            inputs["revision"] = state.revision_note
        return inputs
    return {"question": state.question, "message": state.message}


def task_inputs(task: str) -> set[str]:
    """The placeholders a task's description may use: the inputs ``role_inputs`` gives it."""
    blank = TurnState.for_request(TurnRequest(session_id="-", message="-"))
    return set(role_inputs(task, blank))
