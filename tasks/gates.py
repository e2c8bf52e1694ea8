"""The evidence gates of a turn: where it goes, decided by evidence wherever it can be.

Agents propose, evidence decides. The engine-neutral steps
(``agents/steps.py``) call these; each returns a typed :class:`GateDecision` that the step
records in the trace and the engine's wiring follows:

    intake          a customer who asks for a person is handed off before any model call
    plan_round      does the message need the reformulator at all? (rewrite | as_is)
    merge_rewrite   the model's rewrite is added to the customer's words, never replaces them
    evidence_route  answer | retry | refuse | ask_judge (the judge only when undecided)
    judge_route     the judge's verdict, where evidence left it undecided
    check_draft     the responder's guardrail: done, or revise with the unsupported sentences
    model_role      whether a role takes the model's path (``roles:``) or the evidence path

Usage::

    plan_round(state).route                                   # "as_is"
    evidence_route(state, scorer, settings).route             # "ask_judge"
    judge_route(state, judgement, settings).route             # "answer"
    check_draft(state, scorer, draft.answer).unsupported      # [] when supported
"""

from __future__ import annotations

from config.settings import Settings
from tasks.decision import Conversation, decide
from tasks.entities import referenced
from tasks.evidence import EvidenceScorer, verified
from tasks.followups import named, resolve_follow_up, stands_alone, subject_pages
from tasks.judging import judged
from tasks.message_kind import MessageKinds, kind_for, offer_pending
from tasks.operating_points import operating_points
from tasks.phrasings import grounded_phrasings
from tasks.schemas import Decision, GateDecision, Judgement, Reformulation
from tasks.state import Route, TurnState


def answer_floor(settings: Settings) -> float:
    """The lowest answerability probability that answers without a judge (the undecided
    band's lower edge)."""
    return operating_points(settings.evidence)[0]


def intake(state: TurnState, kinds: MessageKinds) -> GateDecision | None:
    """Before any model call, the message's kind (``tasks/message_kind.py``): a customer who
    asks for a person or says yes to the assistant's offer of one is handed off at once; a
    "no" to the offer, a greeting, thanks or contact details alone ask no page anything and
    get the polite reply, not a search."""
    reading = kinds.read(state.message)
    probability = reading.person
    state.kind = kind_for(reading, offer_pending(state.history))
    state.reads_alone = stands_alone(reading.label, reading.probabilities.get("follow_up", 0.0))
    state.asks_for_person = state.kind == "person"
    if state.asks_for_person:
        why = "the customer asked for a person"
    elif state.kind == "accept":
        why = "the customer accepted the offer of a person"
    else:
        return nothing_asked(state)
    with state.step("intake") as info:
        state.verdict, state.route = "needs_human", "handoff"
        info.update(
            route="handoff",
            decided_by=why,
            kind=state.kind,
            label=reading.label,
            asks_for_person=round(probability, 3),
        )
    decision = Decision(action="handoff", probability=round(probability, 4))
    return state.decide(GateDecision(gate="intake", route="handoff", reason=why, evidence=decision))


NOTHING_ASKED = {
    "decline": "the customer declined the offer of a person",
    "greeting": "the message is a greeting alone: nothing to search",
    "courtesy": "the customer thanked us: nothing to search",
    "goodbye": "the customer said goodbye: nothing to search",
    "contact": "the message leaves contact details: nothing to search",
}


def nothing_asked(state: TurnState) -> GateDecision | None:
    """A greeting, thanks, contact details alone, or a "no" to the offer of a person, ends
    the turn."""
    why = NOTHING_ASKED.get(state.kind)
    if why is None:
        return None
    with state.step("intake") as info:
        state.verdict, state.route, state.nothing_asked = "insufficient", "refuse", True
        info.update(route="refuse", decided_by=why, kind=state.kind)
    return state.decide(
        GateDecision(gate="intake", route="refuse", reason=why, evidence=Decision(action="refuse"))
    )


def plan_round(state: TurnState) -> GateDecision:
    """Whether the reformulator has anything to do this round: ``rewrite`` or ``as_is``.

    What a follow-up refers to is resolved here first, without a model (``follow_up``).
    """
    state.pointed_at = referenced(state.message, state.entities)
    follow_up = resolve_follow_up(
        state.message, state.history, state.entities, reads_alone=state.reads_alone
    )
    state.follow_up = [follow_up.query, follow_up.source] if follow_up else []
    state.follow_up_leans = bool(follow_up and follow_up.leans)
    if state.round_index > 0:
        need, reason = True, f"round {state.round_index}: the evidence asked for another query"
    elif state.pointed_at:
        need, reason = True, "the message points at a remembered " + state.pointed_at[0].type
    elif not state.history:
        need, reason = False, "no history: the message stands alone"
    elif follow_up is not None and follow_up.leans:
        need, reason = True, "the message refers back to the conversation"
    elif follow_up is not None:
        need, reason = False, "the message stands alone; the conversation's subject is added"
    else:
        need, reason = False, "the message stands alone"
    return state.decide(GateDecision(gate="plan", route="rewrite" if need else "as_is", reason=reason))


def merge_rewrite(state: TurnState, reformulation: Reformulation | None) -> dict[str, object]:
    """Queries for this round: the model's rewrite plus what memory names; trace details."""
    rewrite = reformulation or Reformulation(standalone_query="")
    queries = [q.strip() for q in [rewrite.standalone_query, *rewrite.expansions[:2]] if q and q.strip()]
    detail: dict[str, object] = {}
    missing = [e for e in state.pointed_at if not any(e.value.lower() in q.lower() for q in queries)]
    if missing:  # entity memory names what the customer points at
        queries.insert(0, f"{state.message} ({named(missing)})")
        detail["from_entity_memory"] = named(missing)
    if state.follow_up and state.follow_up[0] not in queries:  # resolved without the model
        queries.insert(0, state.follow_up[0])
        detail["follow_up_from"] = state.follow_up[1]
    for remembered in state.memories:  # the earlier case about the same entity
        if any(e.value in remembered.summary for e in state.pointed_at):
            queries.append(remembered.summary)
            detail["from_long_term_memory"] = remembered.session_id
            break
    state.queries = queries
    state.rewrite_failed = reformulation is None
    state.advisory = rewrite.advisory_filters.as_dict()
    detail.update(queries=queries, advisory_filters=state.advisory)
    return detail


def model_role(settings: Settings, role: str) -> bool:
    """Whether ``role`` takes the model's path in this configuration (``roles:``)."""
    return settings.roles.uses_model(role, settings.llm.provider)


def _next_round_or(state: TurnState, settings: Settings, final: Route) -> Route:
    """Another round only when a model could phrase or search differently; else ``final``.
    A round whose reformulation failed (a slow or failing model) is the last: the next one
    would repeat the same search."""
    rephrasing = model_role(settings, "reformulate") or model_role(settings, "retrieve")
    if state.rewrite_failed and model_role(settings, "reformulate"):
        return final
    return "retry" if rephrasing and state.round_index < settings.max_rounds else final


def evidence_route(state: TurnState, scorer: EvidenceScorer, settings: Settings) -> GateDecision:
    """Where the turn goes after a retrieval: the decision's action (``tasks/decision.py``),
    with a judge model, where one is configured, for a suggestion."""
    with state.step("evidence_gate", round=state.round_index) as info:
        state.evidence = decide(
            scorer,
            settings,
            state.message,
            Conversation(tuple(grounded_phrasings(state)), tuple(subject_pages(state.history))),
            state.passages,
        )
        action = state.evidence.action
        info.update(
            action=action,
            answerable=state.evidence.probability,
            features=state.evidence.features.model_dump(),
            contributions=state.evidence.contributions,
            relevance=[round(r, 3) for r in state.evidence.relevance],
            question=state.evidence.question,
            why=state.evidence.why,
            source=state.evidence.source_id,
            pages=state.evidence.pages,
            candidates=[c.model_dump() for c in state.evidence.candidates],
        )
        if action == "answer":
            route: Route = "answer"
            state.verdict, why = "sufficient", "evidence is sufficient"
        elif action == "refuse":
            state.verdict = "insufficient"
            route = _next_round_or(state, settings, "refuse")
            why = "evidence is insufficient" + ("" if state.passages else ": no passages")
        elif model_role(settings, "judge"):
            route, why = "ask_judge", "evidence is undecided: the judge decides"
        else:  # below answer_at: no judge model to weigh in, so the target precision holds
            state.verdict = "insufficient"
            route = _next_round_or(state, settings, "refuse")
            why = (
                "evidence is undecided; roles.judge is evidence: probability below "
                f"{answer_floor(settings):.3f}"
            )
        info.update(route=route, decided_by=why)
    state.route = route
    if route == "retry":
        state.hint = ""
        state.round_index += 1
    return state.decide(
        GateDecision(gate="evidence_gate", route=route, reason=why, evidence=state.evidence)
    )


def judge_route(state: TurnState, judgement: Judgement | None, settings: Settings) -> GateDecision:
    """The judge's verdict on undecided evidence; a failed judge counts as insufficient."""
    with state.step("judge_gate", round=state.round_index) as info:
        verdict, why = judged(state.evidence.action, judgement, state.asks_for_person)
        state.verdict = verdict
        if verdict == "sufficient":
            route: Route = "answer"
            # the model's word alone never answers: its draft must pass the support check
            state.draft_required = state.evidence.action != "answer"
        elif verdict == "needs_human":
            route = "handoff"
        elif verdict == "out_of_scope":
            route = "refuse"
        else:
            route = _next_round_or(state, settings, "refuse")
        info.update(
            model=judgement.verdict if judgement else "failed",
            verdict=verdict,
            decided_by=why,
            route=route,
        )
    state.route = route
    if route == "retry":
        state.hint = (judgement.rewrite_hint or judgement.reason) if judgement else ""
        state.round_index += 1
    return state.decide(GateDecision(gate="judge_gate", route=route, reason=why))


def check_draft(state: TurnState, scorer: EvidenceScorer, answer: str) -> GateDecision:
    """The responder's guardrail: ``done`` when every sentence is supported, else ``revise``
    with the unsupported sentences (and what the responder is told to fix)."""
    with state.step("support_check") as info:
        support = scorer.support(answer, [p.text for p in state.passages])
        unsupported = [s.sentence for s in support if not s.supported]
        info.update(
            sentences=len(support),
            unsupported=len(unsupported),
            courtesy=sum(not s.claim for s in support),
        )
    if verified(support):
        return state.decide(
            GateDecision(gate="support_check", route="done", reason="every sentence is supported")
        )
    return state.decide(
        GateDecision(
            gate="support_check",
            route="revise",
            unsupported=unsupported,
            reason=revision_request(unsupported),
        )
    )


def revision_request(unsupported: list[str]) -> str:
    """What a responder is told when its draft goes back: the sentences to fix."""
    return "These sentences are not supported by the passages; use only their facts: " + " | ".join(
        unsupported[:3]
    )
