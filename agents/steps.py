"""The steps of a turn that every engine runs the same way around its agents.

Loading the customer's context, the inputs each role's task receives, and recording what
the retriever found. The engines decide *when* these run (a CrewAI ``Flow``, an AutoGen
``GraphFlow`` or ``SelectorGroupChat``); the evidence gates in ``tasks/gates.py`` decide
*where the turn goes*.

Usage::

    load_context(state, runtime)                  # history, entities, memories
    inputs = role_inputs("judge", state)          # {"question": ..., "passages": ...}
    tool = bind_search_tool(state, runtime)
    with state.step("retrieve") as info:
        ...                                       # the retriever agent searches
        record_retrieval(state, tool, calls_before, info)   # its search, or a direct one
"""

from __future__ import annotations

from typing import Any

from agents.deadline import expired
from agents.tools.search import KnowledgeBaseSearchTool
from storage.qdrant.store import StoreError
from tasks.gates import model_role, render_entities, render_history, render_passages
from tasks.memory_context import load_context as load_memory
from tasks.memory_context import save_entities
from tasks.schemas import TurnRequest
from tasks.state import TurnState

EVIDENCE_PATH = "roles.{role}: evidence path, no model call"


def role_uses_model(state: TurnState, settings: Any, role: str) -> bool:
    """The role's model path, unless ``roles:`` says evidence or the turn's deadline passed."""
    if not model_role(settings, role):
        return False
    if expired():
        state.note(f"deadline: {role} took the evidence path")
        return False
    return True


class RetrievalUnavailable(RuntimeError):
    """The knowledge base or the memory store could not be reached for this turn."""


def outage_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean a store or search service is down, not a bug."""
    import httpx
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    from integrations.custom_service import CustomServiceError

    return (StoreError, CustomServiceError, OSError, httpx.HTTPError,
            ResponseHandlingException, UnexpectedResponse)


class TurnFailed(RuntimeError):
    """A turn stopped on an exception; ``state`` holds what it had done (its trace)."""

    def __init__(self, state: TurnState, cause: BaseException) -> None:
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.state = state
        self.cause = cause


def is_outage(exc: BaseException) -> bool:
    return isinstance(exc, (RetrievalUnavailable, *outage_errors()))


def load_context(state: TurnState, runtime: Any) -> None:
    """Session history, entity memory and long-term memories (the turn's slot was claimed by
    ``run_turn`` before the engine started)."""
    assert state.request is not None
    with state.step("context") as info:
        try:
            context = load_memory(runtime.memory, state.request, state.turn_index)
            save_entities(runtime.memory, state.request, context)
        except outage_errors() as exc:
            raise RetrievalUnavailable(f"memory store: {exc}") from exc
        state.history = context.history
        state.entities = context.entities
        state.memories = context.memories
        info.update(history=len(context.history), entities=[
            f"{e['type']}:{e['value']}" for e in context.entities[:8]],
            memories=[m["session_id"] for m in context.memories])


def role_inputs(task: str, state: TurnState) -> dict[str, str]:
    """What a role's task description is filled with (``kickoff(inputs=...)``)."""
    if task == "reformulate":
        return {"history": render_history(state), "entities": render_entities(state),
                "message": state.message,
                "rewrite_hint": f"Hint: {state.hint}" if state.hint else ""}
    if task == "retrieve":  # also what agents added to the retrieval step are given
        return {"queries": "; ".join(dict.fromkeys([state.message, *state.queries])),
                "question": state.question, "message": state.message}
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


def bind_search_tool(state: TurnState, runtime: Any) -> KnowledgeBaseSearchTool:
    """The search tool of this turn: enforced slots, original message, remembered entities."""
    return KnowledgeBaseSearchTool.for_turn(runtime.retriever, state.slots, state.message,
                                            [e["value"] for e in state.entities[:8]])


def record_retrieval(state: TurnState, tool: KnowledgeBaseSearchTool, calls_before: int,
                     info: dict[str, Any], agent_error: str = "",
                     extra_passages: list[Any] | None = None) -> None:
    """Keep the retriever agent's search (into the open ``retrieve`` step's ``info``); when
    it did not search, search directly."""
    made = tool.calls[calls_before:]
    if made:
        info["searched_by"] = "retriever agent"
    else:
        info["searched_by"] = "the turn (the retriever agent made no search" + (
            f": {agent_error})" if agent_error else ")")
        try:
            tool.search()
        except outage_errors() as exc:
            raise RetrievalUnavailable(f"knowledge base: {exc}") from exc
        made = tool.calls[calls_before:]
    output = made[-1]
    if len(made) > 1:  # several searches: keep the passages of all, best first
        seen: dict[str, Any] = {}
        for call in made:
            for passage in call.passages:
                if passage.chunk_id not in seen or passage.score > seen[passage.chunk_id].score:
                    seen[passage.chunk_id] = passage
        ranked = sorted(seen.values(), key=lambda p: -p.score)
        output = output.model_copy(update={"passages": [
            p.model_copy(update={"pid": i}) for i, p in enumerate(ranked, start=1)],
            "queries": list(dict.fromkeys(q for c in made for q in c.queries))})
    if extra_passages:
        start = len(output.passages) + 1
        output = output.model_copy(update={"passages": [*output.passages, *(
            p.model_copy(update={"pid": start + i}) for i, p in enumerate(extra_passages))]})
    state.retrieval = output
    info.update(queries=output.queries, filters=output.filters,
                ignored_filters=output.ignored_filters, entities=output.entities,
                ids=[p.chunk_id for p in output.passages],
                via={p.chunk_id: p.via for p in output.passages})
