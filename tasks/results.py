"""What a turn gives the customer: a verified draft or the extractive answer with its citation,
the refusal, the hand-off, or the best evidence-based outcome when the time ran out.

Usage::

    state.result = answer_result(state, scorer, settings, draft)   # or draft=None: extractive
    state.result = closing_result(state, settings)                 # refuse or hand-off route
    late.result = deadline_result(late, scorer, settings, running="respond")
"""

from __future__ import annotations

from config.settings import Settings
from tasks.evidence import EvidenceScorer, sentences, verified
from tasks.gates import evidence_route, model_role
from tasks.polite_replies import polite_reply
from tasks.schemas import Citation, DraftAnswer, Passage, TurnResult
from tasks.state import TurnState


def _citation(passage: Passage, snippet: str) -> Citation:
    return Citation(
        source_id=passage.source_id,
        chunk_id=passage.chunk_id,
        title=passage.title,
        url=passage.url,
        snippet=snippet[:300],
        score=round(passage.score, 4),
    )


def _verified(
    state: TurnState, scorer: EvidenceScorer, draft: DraftAnswer
) -> tuple[str, list[Citation]] | None:
    """The draft with citations from evidence when every sentence is supported, else None."""
    passages = state.passages
    support = scorer.support(draft.answer, [p.text for p in passages])
    if not verified(support):
        weak = [s.sentence for s in support if not s.supported]
        state.note(
            f"draft answer replaced: {len(weak)} unsupported sentence(s)"
            if weak
            else "draft answer replaced: it makes no claim to check"
        )
        return None
    used: list[int] = []
    for s in support:
        if s.passage_index is not None and s.passage_index not in used:
            used.append(s.passage_index)
    citations = [
        _citation(passages[i], next(x.sentence for x in support if x.passage_index == i)) for i in used
    ]
    claimed = sorted(set(draft.passage_ids))
    actual = sorted(passages[i].pid for i in used)
    if claimed != actual:
        state.note(f"citations from evidence {actual}, not the model's claim {claimed}")
    return draft.answer.strip(), citations


def _extracted(state: TurnState) -> tuple[str, list[Citation]]:
    """The sentences the decision quotes from the passage that answers, with one citation."""
    decision = state.evidence
    if not decision.quote or decision.passage_index is None:
        return "", []
    text = " ".join(decision.quote)
    return f"{text} [1]", [_citation(state.passages[decision.passage_index], text)]


def answer_result(
    state: TurnState, scorer: EvidenceScorer, settings: Settings, draft: DraftAnswer | None
) -> TurnResult:
    """The verified draft, else the extractive answer; with no supporting passage, a refusal."""
    with state.step("verify") as info:
        kept = _verified(state, scorer, draft) if draft is not None and draft.answer.strip() else None
        if kept is None and state.draft_required:
            info.update(kept_draft=False, cited=[])
            state.note("evidence was undecided and no model draft passed the support check")
            return refuse_result(state, settings)
        answer, citations = kept or _extracted(state)
        info.update(kept_draft=kept is not None, cited=[c.chunk_id for c in citations])
    if not citations:
        state.note("no passage supports an answer")
        return refuse_result(state, settings)
    return TurnResult(
        session_id=state.request.session_id if state.request else "",
        answer=answer,
        verdict="answered",
        judge_verdict=state.verdict,
        citations=citations,
    )


def deadline_result(
    state: TurnState, scorer: EvidenceScorer, settings: Settings, running: str, why: str = ""
) -> TurnResult:
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
    if state.passages and state.evidence.action == "answer":
        state.draft_required = False
        return answer_result(state, scorer, settings, None)
    return refuse_result(state, settings)


def refuse_result(state: TurnState, settings: Settings) -> TurnResult:
    """No answer: where the evidence was undecided (between ``refuse_below`` and
    ``answer_at``) and no judge model weighed in, the page it read best is offered as "this
    article may help" (verdict ``suggest``, never counted as an answer); else "no results"."""
    session_id = state.request.session_id if state.request else ""
    if state.nothing_asked:
        return TurnResult(
            session_id=session_id,
            answer=polite_reply(settings.messages, state.kind),
            verdict="idk",
            judge_verdict=state.verdict,
        )
    suggested = None if model_role(settings, "judge") else _suggested(state)
    if suggested is not None:
        state.note(
            f"undecided evidence ({state.evidence.probability:.3f}): "
            f"{suggested.source_id} offered as an article that may help"
        )
        return TurnResult(
            session_id=session_id,
            answer=f"{settings.messages.suggest} {suggested.title or suggested.source_id}",
            verdict="suggest",
            judge_verdict=state.verdict,
            citations=[_citation(suggested, " ".join(sentences(suggested.text)[:2]))],
        )
    return TurnResult(
        session_id=session_id,
        answer=settings.messages.no_results,
        verdict="idk",
        judge_verdict=state.verdict,
        offers_handoff=settings.messages.no_results_offers_handoff,
    )


def _suggested(state: TurnState) -> Passage | None:
    """The page to offer when the evidence was undecided, else None."""
    if state.evidence.action != "suggest" or not state.evidence.source_id:
        return None
    return next((p for p in state.passages if p.source_id == state.evidence.source_id), None)


def handoff_result(state: TurnState, settings: Settings) -> TurnResult:
    return TurnResult(
        session_id=state.request.session_id if state.request else "",
        answer=settings.messages.handoff,
        verdict="handoff",
        judge_verdict=state.verdict,
        handoff=True,
    )


def closing_result(state: TurnState, settings: Settings) -> TurnResult:
    """The result for a route that ends without an answer (refuse or hand-off)."""
    return (
        handoff_result(state, settings) if state.route == "handoff" else refuse_result(state, settings)
    )
