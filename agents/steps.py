"""Each step of a support turn, written once, engine-neutral: the engines only wire them.

The CrewAI ``Flow`` (``agents/crewai/flow.py``) and the AutoGen agents
(``agents/autogen/agents.py``) call these in the order of ``agents/topology.py``; where a
role's model has a part, the step yields a :class:`RoleCall` (or :class:`Search`) for the
engine to fill in, and does the rest itself: the trace, the evidence path, the gate. Each
gate's typed :class:`GateDecision` is recorded in the trace and returned; nothing reads it
back from the trace.

Usage::

    steps = TurnSteps(state, runtime)
    steps.open()                                  # history, entities, memories; the search tool
    decision = steps.intake() or steps.plan()     # handoff | rewrite | as_is
    with steps.reformulation() as call:           # the reformulator, when the plan says rewrite
        if call.uses_model:
            call.output = ask_the_model(...)      # a Reformulation, or None
    with steps.retrieval() as search:             # the retriever agent searches with search.tool
        if search.uses_model:
            ...                                   # else (or when it did not search) the turn does
    decision = steps.evidence_gate()              # answer | retry | refuse | ask_judge
    decision = steps.judge(judgement)             # where the evidence was undecided
    with steps.drafting() as call: ...            # the responder's draft
    steps.check_draft(draft)                      # done | revise
    steps.answer(draft)  /  steps.close()         # state.result
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agents.deadline import expired
from agents.failures import RetrievalUnavailable, outage_errors
from agents.tools.search import KnowledgeBaseSearch
from tasks.followups import subject_pages
from tasks.gates import (
    check_draft,
    evidence_route,
    intake,
    judge_route,
    merge_rewrite,
    model_role,
    plan_round,
)
from tasks.memory_context import load_context as load_memory
from tasks.memory_context import save_entities
from tasks.message_kind import load_message_kinds
from tasks.results import answer_result, closing_result
from tasks.schemas import DraftAnswer, GateDecision, Judgement, Passage, TurnResult
from tasks.state import TurnState

if TYPE_CHECKING:
    from agents.runtime import TurnRuntime

EVIDENCE_PATH = "roles.{role}: evidence path, no model call"


@dataclass
class RoleCall:
    """A role's part in a step: whether its model is asked, and what it gave (None: nothing
    usable, or the evidence path)."""

    uses_model: bool
    output: Any = None
    info: dict[str, Any] = field(default_factory=dict)  # the open step's trace details


@dataclass
class Search:
    """The retrieval step's part for the retriever agent: the bound tool, whether the model
    searches, what it failed with, and evidence that added agents found."""

    tool: KnowledgeBaseSearch
    uses_model: bool
    error: str = ""
    extra: list[Passage] = field(default_factory=list)


class TurnSteps:
    """The steps of one turn over its ``TurnState``; build one per turn."""

    def __init__(self, state: TurnState, runtime: TurnRuntime) -> None:
        self.state = state
        self.runtime = runtime
        self._tool: KnowledgeBaseSearch | None = None

    @property
    def opened(self) -> bool:
        """Whether :meth:`open` has run (the context loaded, the search tool bound)."""
        return self._tool is not None

    @property
    def tool(self) -> KnowledgeBaseSearch:
        """The turn's search tool (bound by :meth:`open`)."""
        assert self._tool is not None, "open() binds the search tool first"
        return self._tool

    def uses_model(self, role: str) -> bool:
        """The role's model path, unless ``roles:`` says evidence or the turn's deadline passed."""
        if not model_role(self.runtime.settings, role):
            return False
        if expired():
            self.state.note(f"deadline: {role} took the evidence path")
            return False
        return True

    # -- context ---------------------------------------------------------------------------
    def open(self) -> None:
        """Session history, entity memory and long-term memories (the turn's slot was claimed
        by ``run_turn`` before the engine started); the turn's search tool."""
        state = self.state
        assert state.request is not None
        with state.step("context") as info:
            try:
                context = load_memory(self.runtime.memory, state.request, state.turn_index)
                save_entities(self.runtime.memory, state.request, context)
            except outage_errors() as exc:
                raise RetrievalUnavailable(f"memory store: {exc}") from exc
            state.history = context.history
            state.entities = context.entities
            state.memories = context.memories
            info.update(
                history=len(context.history),
                entities=[f"{e.type}:{e.value}" for e in context.entities[:8]],
                memories=[m.session_id for m in context.memories],
            )
        self._tool = KnowledgeBaseSearch.for_turn(
            self.runtime.retriever, state.slots, state.message, [e.value for e in state.entities[:8]]
        )

    def intake(self) -> GateDecision | None:
        """``handoff`` when the customer asks for a person, the polite close when the message asks
        nothing (``tasks/message_kind.py``), before any model call."""
        return intake(self.state, load_message_kinds(self.runtime.scorer.encoders))

    def plan(self) -> GateDecision:
        """``rewrite`` when the message needs the reformulator this round, else ``as_is``."""
        decision = plan_round(self.state)
        if decision.route == "as_is":
            self.state.skip("reformulate", decision.reason, round=self.state.round_index)
            self.state.queries, self.state.advisory = [], {}
        return decision

    # -- the model's steps -----------------------------------------------------------------
    @contextmanager
    def reformulation(self) -> Iterator[RoleCall]:
        """The reformulate step: the engine fills ``call.output`` with the model's rewrite."""
        with self.state.step("reformulate", round=self.state.round_index) as info:
            call = RoleCall(self.uses_model("reformulate"), info=info)
            if not call.uses_model:
                info["decided_by"] = EVIDENCE_PATH.format(role="reformulate")
            yield call
            info.update(merge_rewrite(self.state, call.output))

    @contextmanager
    def retrieval(self) -> Iterator[Search]:
        """The retrieve step: this round's queries and advisory filters are bound to the tool;
        the retriever agent searches with ``search.tool`` (when ``search.uses_model``); when it
        made no search, the turn searches directly."""
        self.tool.bind_round(self.state.queries, self.state.advisory)
        search = Search(self.tool, self.uses_model("retrieve"))
        before = len(search.tool.calls)
        with self.state.step("retrieve", round=self.state.round_index) as info:
            yield search
            why = search.error or ("" if search.uses_model else EVIDENCE_PATH.format(role="retrieve"))
            record_retrieval(self.state, search.tool, before, info, why, search.extra)

    def evidence_gate(self) -> GateDecision:
        return evidence_route(self.state, self.runtime.scorer, self.runtime.settings)

    def judge(self, judgement: Judgement | None) -> GateDecision:
        return judge_route(self.state, judgement, self.runtime.settings)

    @contextmanager
    def drafting(self, name: str = "respond", **detail: Any) -> Iterator[RoleCall]:
        """The respond step (``revise`` for a second draft): the engine fills ``call.output``
        with the responder's ``DraftAnswer``."""
        with self.state.step(name, **detail) as info:
            call = RoleCall(self.uses_model("respond"), info=info)
            if not call.uses_model:
                info["decided_by"] = EVIDENCE_PATH.format(role="respond")
            yield call
        self.state.draft = call.output

    def check_draft(self, draft: DraftAnswer) -> GateDecision:
        """The responder's guardrail: ``done``, or ``revise`` with what to fix (``reason``)."""
        return check_draft(self.state, self.runtime.scorer, draft.answer)

    # -- the end -----------------------------------------------------------------------------
    def answer(self, draft: DraftAnswer | None) -> TurnResult:
        """The verified draft, else the extractive answer (or the refusal)."""
        self.state.result = answer_result(self.state, self.runtime.scorer, self.runtime.settings, draft)
        return self.state.result

    def close(self) -> TurnResult:
        """A turn that ends without an answer: the refusal or the hand-off message."""
        if self.state.result is None:
            self.state.skip("respond", f"route {self.state.route}: no grounded answer")
            self.state.result = closing_result(self.state, self.runtime.settings)
        return self.state.result


def record_retrieval(
    state: TurnState,
    tool: KnowledgeBaseSearch,
    calls_before: int,
    info: dict[str, Any],
    agent_error: str = "",
    extra_passages: list[Passage] | None = None,
) -> None:
    """Keep the retriever agent's search (into the open ``retrieve`` step's ``info``); when
    it did not search, search directly."""
    made = tool.calls[calls_before:]
    if made:
        info["searched_by"] = "retriever agent"
    else:
        info["searched_by"] = "the turn (the retriever agent made no search" + (
            f": {agent_error})" if agent_error else ")"
        )
        try:
            tool.search()
        except outage_errors() as exc:
            raise RetrievalUnavailable(f"knowledge base: {exc}") from exc
        made = tool.calls[calls_before:]
    output = made[-1]
    if len(made) > 1:  # several searches: keep the passages of all, best first
        seen: dict[str, Passage] = {}
        for call in made:
            for passage in call.passages:
                if passage.chunk_id not in seen or passage.score > seen[passage.chunk_id].score:
                    seen[passage.chunk_id] = passage
        ranked = sorted(seen.values(), key=lambda p: -p.score)
        output = output.model_copy(
            update={
                "passages": [p.model_copy(update={"pid": i}) for i, p in enumerate(ranked, start=1)],
                "queries": list(dict.fromkeys(q for c in made for q in c.queries)),
            }
        )
    subject = subject_pages(state.history)
    if subject:  # the page the conversation is about stays a candidate for a follow-up
        try:
            found = tool.page_passages(subject)
        except outage_errors() as exc:
            raise RetrievalUnavailable(f"knowledge base: {exc}") from exc
        have = {p.chunk_id for p in output.passages} | {p.chunk_id for p in extra_passages or []}
        extra_passages = [
            *(extra_passages or []),
            *(
                p.model_copy(update={"via": "conversation page"})
                for p in found
                if p.chunk_id not in have
            ),
        ]
    if extra_passages:
        start = len(output.passages) + 1
        output = output.model_copy(
            update={
                "passages": [
                    *output.passages,
                    *(p.model_copy(update={"pid": start + i}) for i, p in enumerate(extra_passages)),
                ]
            }
        )
    state.retrieval = output
    state.trace.queries = list(dict.fromkeys([*state.trace.queries, *output.queries]))
    info.update(
        queries=output.queries,
        filters=output.filters,
        ignored_filters=output.ignored_filters,
        entities=output.entities,
        ids=[p.chunk_id for p in output.passages],
        via={p.chunk_id: p.via for p in output.passages},
    )
