"""The evidence gates of a turn: plain functions that every engine and process calls.

Agents propose, evidence decides (DESIGN.md principle 1). The CrewAI ``Flow``'s ``@router``
methods and the AutoGen ``GraphFlow``'s gate agents call these and follow what they return:

    intake_route    a customer who asks for a person is handed off before any model call
    plan_rewrite    does the message need the reformulator at all?
    merge_rewrite   the model's rewrite is added to the customer's words, never replaces them
    evidence_route  answer | retry | refuse | handoff | ask_judge (judge only when undecided)
    model_role      whether a role takes the model's path (``roles:``) or the evidence path
    judge_route     the judge's verdict, where evidence left it undecided
    support_check   the responder's guardrail: which draft sentences the passages do not support
    answer_result   a verified draft, or the extractive answer; refuse_result / handoff_result
    deadline_result the best evidence-based outcome when the turn's time ran out

Usage::

    plan_rewrite(state)
    route = evidence_route(state, scorer, settings)       # "ask_judge"
    route = judge_route(state, judgement, settings)       # "answer"
    ok, unsupported = support_check(state, scorer, draft.answer)
    state.result = answer_result(state, scorer, settings, draft)
"""

from __future__ import annotations

from collections.abc import Sequence

from config.settings import Settings
from tasks.answerability import quote
from tasks.courtesy import asks_something, subject
from tasks.entities import referenced
from tasks.evidence import EvidenceScorer, verified
from tasks.facts import asked_codes
from tasks.followups import named, resolve_follow_up, subject_pages
from tasks.judging import assess, decide, read_passages, wants_human
from tasks.passage_text import split_sentences
from tasks.schemas import Citation, DraftAnswer, Judgement, Passage, Reformulation, TurnResult
from tasks.state import EvidenceView, Route, TurnState

PROMPT_PASSAGES = 3
PROMPT_CHARS = 450
_CALL_RANK = {"sufficient": 2, "undecided": 1, "insufficient": 0}


def render_passages(passages: list[Passage]) -> str:
    """The passages as the judge and responder see them: numbered, trimmed."""
    return "\n".join(f"[{p.pid}] {p.title}: {p.text[:PROMPT_CHARS]}"
                     for p in passages[:PROMPT_PASSAGES]) or "(no passages)"


def render_history(state: TurnState) -> str:
    lines = [f"Customer: {t.user}\nAssistant: {t.answer[:300]}" for t in state.history[-3:]]
    return "\n".join(lines) or "(none)"


def render_entities(state: TurnState) -> str:
    lines = [f"- {e['type']}: {e['value']}" for e in state.entities[:8]]
    lines += [f"- earlier: {m['summary'][:120]} -> {m['resolution'][:160]}"
              for m in state.memories]
    return "\n".join(lines) or "(none)"


def intake_route(state: TurnState) -> Route | None:
    """Before any model call: a customer who asks for a person is handed off at once."""
    if not wants_human(state.message):
        return None
    with state.step("intake") as info:
        state.verdict, state.route = "needs_human", "handoff"
        info.update(route="handoff", decided_by="the customer asked for a person")
    return "handoff"


def plan_rewrite(state: TurnState) -> bool:
    """Decide whether the reformulator has anything to do; the reason goes to the trace.

    What a follow-up refers to is resolved here first, without a model (``follow_up``).
    """
    state.pointed_at = referenced(state.message, state.entities)
    follow_up = resolve_follow_up(state.message, state.history, state.entities)
    state.follow_up = [follow_up.query, follow_up.source] if follow_up else []
    state.follow_up_leans = bool(follow_up and follow_up.leans)
    if state.round_index > 0:
        need, reason = True, f"round {state.round_index}: the evidence asked for another query"
    elif state.pointed_at:
        need, reason = True, "the message points at a remembered " + state.pointed_at[0]["type"]
    elif not state.history:
        need, reason = False, "no history: the message stands alone"
    elif follow_up is not None and follow_up.leans:
        need, reason = True, "the message refers back to the conversation"
    elif follow_up is not None:
        need, reason = False, "the message stands alone; the conversation's subject is added"
    else:
        need, reason = False, "the message stands alone"
    state.needs_rewrite, state.rewrite_reason = need, reason
    return need


def merge_rewrite(state: TurnState, reformulation: Reformulation | None) -> dict[str, object]:
    """Queries for this round: the model's rewrite plus what memory names; trace details."""
    rewrite = reformulation or Reformulation(standalone_query="")
    queries = [q.strip() for q in [rewrite.standalone_query, *rewrite.expansions[:2]]
               if q and q.strip()]
    detail: dict[str, object] = {}
    missing = [e for e in state.pointed_at
               if not any(e["value"].lower() in q.lower() for q in queries)]
    if missing:  # entity memory names what the customer points at
        queries.insert(0, f"{state.message} ({named(missing)})")
        detail["from_entity_memory"] = named(missing)
    if state.follow_up and state.follow_up[0] not in queries:  # resolved without the model
        queries.insert(0, state.follow_up[0])
        detail["follow_up_from"] = state.follow_up[1]
    for remembered in state.memories:  # the earlier case about the same entity
        if any(e["value"] in remembered["summary"] for e in state.pointed_at):
            queries.append(remembered["summary"])
            detail["from_long_term_memory"] = remembered["session_id"]
            break
    state.queries = queries
    state.rewrite_failed = reformulation is None
    state.advisory = rewrite.advisory_filters.as_dict()
    detail.update(queries=queries, advisory_filters=state.advisory)
    return detail


def strongest_evidence(scorer: EvidenceScorer, settings: Settings, questions: list[str],
                       passages: list[Passage], subject: Sequence[str] = ()) -> EvidenceView:
    """Assess each phrasing of the question; keep the one the evidence supports best.

    ``subject``: the pages the conversation is about. A phrasing that one of them answers
    sufficiently wins over another page's, however strong (a follow-up belongs to the page
    the conversation is about); when none of them answers, the strongest reading decides.
    """
    views: list[EvidenceView] = []
    for text in dict.fromkeys(q for q in questions if q and q.strip()):
        found = assess(scorer, text, passages, settings.evidence)
        index = found.reading.passage_index if found.reading else None
        view = EvidenceView(call=found.call, relevance=found.relevance, coverage=found.coverage,
                            probability=found.probability,
                            features=found.reading.features if found.reading else {},
                            question=text,
                            source_id=passages[index].source_id if index is not None else "")
        views.append(view)
    if not views:
        return EvidenceView()
    on_subject = [v for v in views if v.source_id in subject and v.call == "sufficient"]
    return max(on_subject or views, key=lambda v: (_CALL_RANK[v.call], v.probability))


def model_role(settings: Settings, role: str) -> bool:
    """Whether ``role`` takes the model's path in this configuration (``roles:``)."""
    return settings.roles.uses_model(role, settings.llm.provider)


def wrapped_question(message: str) -> str:
    """The one question of a message that wraps it in other sentences, else "".

    >>> wrapped_question("My order X was charged twice. How long does a refund take?")
    'How long does a refund take?'
    """
    parts = split_sentences(" ".join(message.split()))
    asked = [p for p in parts if p.endswith("?") and asks_something(p)]
    return asked[0] if len(asked) == 1 and len(parts) > 1 else ""


def problem_question(message: str) -> str:
    """A problem statement ("My backup on build-7 failed with E-429.") asks about its code.

    >>> problem_question("My backup on build-7 failed last night with error E-429.")
    'What does error E-429 mean?'
    >>> problem_question("Hi. Our sync got error E-429. Can you help me with that?")
    'What does error E-429 mean?'
    >>> problem_question("What does E-429 mean?")
    ''
    """
    named = sorted(asked_codes(message))
    if len(named) != 1 or "?" in subject(message):
        return ""
    return f"What does error {named[0]} mean?"


def first_turn_phrasings(message: str) -> list[str]:
    """What the gate judges for a message with no history: the whole message, the one
    question it wraps, and the question a problem statement asks about its code, if any."""
    extra = [wrapped_question(message), problem_question(message)]
    return [message, *(q for q in extra if q)]


def grounded_phrasings(state: TurnState) -> list[str]:
    """What the passages must answer: the customer's words or, for a follow-up, those words
    with what they refer to (the previous question's subject, a remembered entity).

    A model's rewrite helps the search but is never what the gate judges: a rewrite can drift
    to another question. A message that wraps one question in context ("My order X was
    charged twice. How long does a refund take?") is also judged by that question alone.
    """
    named = [q for q in state.queries if q.startswith(state.message) and q != state.message]
    resolved = list(dict.fromkeys([*state.follow_up[:1], *named]))
    # a message that stands alone is judged by its own words: the conversation's subject terms
    # only brought its page into the search (a neighbour's words must not make it answer)
    if not resolved or not (state.follow_up_leans or named):
        return first_turn_phrasings(state.message)
    question = wrapped_question(state.message)  # the bare words of a follow-up do not stand alone
    extra = [f"{question}{r[len(state.message):]}" for r in resolved] if question else []
    return [*resolved, *extra]


def _next_round_or(state: TurnState, settings: Settings, final: Route) -> Route:
    """Another round only when a model could phrase or search differently; else ``final``.
    A round whose reformulation failed (a slow or failing model) is the last: the next one
    would repeat the same search."""
    rephrasing = model_role(settings, "reformulate") or model_role(settings, "retrieve")
    if state.rewrite_failed and model_role(settings, "reformulate"):
        return final
    return "retry" if rephrasing and state.round_index < settings.max_rounds else final


def evidence_route(state: TurnState, scorer: EvidenceScorer, settings: Settings) -> Route:
    """Where the turn goes after a retrieval, decided by evidence alone where it can be."""
    with state.step("evidence_gate", round=state.round_index) as info:
        state.evidence = strongest_evidence(scorer, settings, grounded_phrasings(state),
                                            state.passages, subject_pages(state.history))
        info.update(evidence=state.evidence.call, answerable=state.evidence.probability,
                    features=state.evidence.features,
                    relevance=[round(r, 3) for r in state.evidence.relevance],
                    question=state.evidence.question, source=state.evidence.source_id)
        if state.evidence.call == "sufficient":
            route, state.verdict, why = "answer", "sufficient", "evidence is sufficient"
        elif state.evidence.call == "insufficient":
            state.verdict = "insufficient"
            route = _next_round_or(state, settings, "refuse")
            why = "evidence is insufficient" + ("" if state.passages else ": no passages")
        elif model_role(settings, "judge"):
            route, why = "ask_judge", "evidence is undecided: the judge decides"
        else:  # below answer_at: no judge model to weigh in, so the target precision holds
            state.verdict = "insufficient"
            route = _next_round_or(state, settings, "refuse")
            why = ("evidence is undecided; roles.judge is evidence: probability below "
                   f"{settings.evidence.operating_points()[0]:.3f}")
        info.update(route=route, decided_by=why)
    state.route = route
    if route == "retry":
        state.hint = ""
        state.round_index += 1
    return route


def judge_route(state: TurnState, judgement: Judgement | None, settings: Settings) -> Route:
    """The judge's verdict on undecided evidence; a failed judge counts as insufficient."""
    state.judgement = judgement
    with state.step("judge_gate", round=state.round_index) as info:
        verdict, why = decide(state.evidence.call, judgement, state.message)
        state.verdict = verdict
        if verdict == "sufficient":
            route: Route = "answer"
            # the model's word alone never answers: its draft must pass the support check
            state.draft_required = state.evidence.call != "sufficient"
        elif verdict == "needs_human":
            route = "handoff"
        elif verdict == "out_of_scope":
            route = "refuse"
        else:
            route = _next_round_or(state, settings, "refuse")
        info.update(model=judgement.verdict if judgement else "failed", verdict=verdict,
                    decided_by=why, route=route)
    state.route = route
    if route == "retry":
        state.hint = (judgement.rewrite_hint or judgement.reason) if judgement else ""
        state.round_index += 1
    return route


def support_check(state: TurnState, scorer: EvidenceScorer, answer: str
                  ) -> tuple[bool, list[str]]:
    """The responder's guardrail: (every sentence supported, the unsupported sentences)."""
    with state.step("support_check") as info:
        support = scorer.support(answer, [p.text for p in state.passages])
        unsupported = [s.sentence for s in support if not s.supported]
        info.update(sentences=len(support), unsupported=len(unsupported),
                    courtesy=sum(not s.claim for s in support))
    return verified(support), unsupported


def revision_request(unsupported: list[str]) -> str:
    """What a responder is told when its draft goes back: the sentences to fix."""
    return ("These sentences are not supported by the passages; use only their facts: "
            + " | ".join(unsupported[:3]))


def _citation(passage: Passage, snippet: str) -> Citation:
    return Citation(source_id=passage.source_id, chunk_id=passage.chunk_id, title=passage.title,
                    url=passage.url, snippet=snippet[:300], score=round(passage.score, 4))


def _verified(state: TurnState, scorer: EvidenceScorer, draft: DraftAnswer
              ) -> tuple[str, list[Citation]] | None:
    """The draft with citations from evidence when every sentence is supported, else None."""
    passages = state.passages
    support = scorer.support(draft.answer, [p.text for p in passages])
    if not verified(support):
        weak = [s.sentence for s in support if not s.supported]
        state.note(f"draft answer replaced: {len(weak)} unsupported sentence(s)" if weak
                   else "draft answer replaced: it makes no claim to check")
        return None
    used: list[int] = []
    for s in support:
        if s.passage_index is not None and s.passage_index not in used:
            used.append(s.passage_index)
    citations = [_citation(passages[i], next(x.sentence for x in support
                                             if x.passage_index == i)) for i in used]
    claimed = sorted(set(draft.passage_ids))
    actual = sorted(passages[i].pid for i in used)
    if claimed != actual:
        state.note(f"citations from evidence {actual}, not the model's claim {claimed}")
    return draft.answer.strip(), citations


def _extracted(state: TurnState, scorer: EvidenceScorer, settings: Settings
               ) -> tuple[str, list[Citation]]:
    """The contiguous sentences of the passage that answers, quoted with one citation."""
    passages = state.passages
    question = state.evidence.question or state.question
    # a follow-up's resolution, or the question of a message: the message's words pick too
    reading = read_passages(scorer, question, passages, state.evidence.relevance or None,
                            settings.evidence, state.message)
    picked = quote(reading, question, settings.evidence.answer_words)
    if not picked:
        return "", []
    passage = passages[picked[0][1]]
    text = " ".join(sentence for sentence, _ in picked)
    return f"{text} [1]", [_citation(passage, text)]


def answer_result(state: TurnState, scorer: EvidenceScorer, settings: Settings,
                  draft: DraftAnswer | None) -> TurnResult:
    """The verified draft, else the extractive answer; with no supporting passage, a refusal."""
    with state.step("verify") as info:
        kept = _verified(state, scorer, draft) if draft is not None and draft.answer.strip() \
            else None
        if kept is None and state.draft_required:
            info.update(kept_draft=False, cited=[])
            state.note("evidence was undecided and no model draft passed the support check")
            return refuse_result(state, settings)
        answer, citations = kept or _extracted(state, scorer, settings)
        info.update(kept_draft=kept is not None, cited=[c.chunk_id for c in citations])
    if not citations:
        state.note("no passage supports an answer")
        return refuse_result(state, settings)
    return TurnResult(session_id=state.request.session_id if state.request else "",
                      answer=answer, verdict="answered", judge_verdict=state.verdict,
                      citations=citations)


def deadline_result(state: TurnState, scorer: EvidenceScorer, settings: Settings,
                    running: str, why: str = "") -> TurnResult:
    """The best evidence-based outcome of a turn whose time ran out during ``running`` (or
    that ``why`` says was stopped): an extractive answer where the passages answer, else
    "no results" (or the hand-off)."""
    ended = why or f"deadline: {settings.turn_timeout_s:g} s passed"
    state.note(f"{ended} during {running}; evidence decided the outcome")
    if state.result is not None:
        return state.result
    if state.route == "handoff":
        return handoff_result(state, settings)
    if state.passages and not state.evidence.question:
        evidence_route(state, scorer, settings)
    if state.passages and state.evidence.probability >= settings.evidence.operating_points()[0]:
        state.draft_required = False
        return answer_result(state, scorer, settings, None)
    return refuse_result(state, settings)


def refuse_result(state: TurnState, settings: Settings) -> TurnResult:
    return TurnResult(session_id=state.request.session_id if state.request else "",
                      answer=settings.messages.no_results, verdict="idk",
                      judge_verdict=state.verdict)


def handoff_result(state: TurnState, settings: Settings) -> TurnResult:
    return TurnResult(session_id=state.request.session_id if state.request else "",
                      answer=settings.messages.handoff, verdict="handoff",
                      judge_verdict=state.verdict, handoff=True)


def closing_result(state: TurnState, settings: Settings) -> TurnResult:
    """The result for a route that ends without an answer (refuse or hand-off)."""
    return handoff_result(state, settings) if state.route == "handoff" \
        else refuse_result(state, settings)
