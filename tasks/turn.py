"""One support turn, the single entry point of every interface: ``run_turn``.

    context → reformulate → retrieve → judge (→ reformulate again, up to max_rounds) → respond

Retrieval never depends on the model choosing to search: the retriever's task is the search
tool's call, made here with the original message and any reformulations. The answer is
verified against the passages; an unsupported answer is replaced by an extractive one, and no
evidence gives the configured "no results" message, a failure ``connection_problem``.

Usage::

    runtime = build_runtime(settings, data_dir)
    result = run_turn(TurnRequest(session_id="s", message="Refund time?"), runtime)
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from agents.search_tool import KnowledgeBaseSearchTool
from agents.usage import UsageLedger
from tasks.entities import referenced
from tasks.judging import Evidence, assess, decide
from tasks.memory_context import MemoryContext, load_context, save_pending, save_result
from tasks.runtime import TurnRuntime
from tasks.schemas import (
    Citation,
    DraftAnswer,
    HistoryTurn,
    Judgement,
    LlmCallTrace,
    Passage,
    Reformulation,
    RetrievalOutput,
    Step,
    Trace,
    TurnRequest,
    TurnResult,
)

_DEPENDENT = re.compile(
    r"\b(it|its|that|this|those|these|they|them|there|same|one|ones)\b"
    r"|^(and|but|what about|how about)\b",
    re.IGNORECASE,
)
PROMPT_PASSAGES = 3
PROMPT_CHARS = 450


def needs_reformulation(message: str, history: list[HistoryTurn], pointed_at: list[dict]
                        ) -> tuple[bool, str]:
    if pointed_at:
        return True, "the message points at a remembered " + pointed_at[0]["type"]
    if not history:
        return False, "no history: the message stands alone"
    if _DEPENDENT.search(message.strip()) or len(message.split()) <= 4:
        return True, "the message refers back to the conversation"
    return False, "the message stands alone"


def render_passages(passages: list[Passage]) -> str:
    return "\n".join(f"[{p.pid}] {p.title}: {p.text[:PROMPT_CHARS]}"
                     for p in passages[:PROMPT_PASSAGES]) or "(no passages)"


def render_history(history: list[HistoryTurn]) -> str:
    lines = [f"Customer: {t.user}\nAssistant: {t.answer[:300]}" for t in history[-3:]]
    return "\n".join(lines) or "(none)"


class _Trace:
    def __init__(self) -> None:
        self.trace = Trace()

    @contextmanager
    def step(self, name: str, **detail: Any) -> Iterator[dict[str, Any]]:
        started = time.perf_counter()
        info = dict(detail)
        try:
            yield info
        finally:
            self.trace.steps.append(Step(name=name, ms=round((time.perf_counter() - started)
                                                               * 1000, 1), detail=info))

    def skip(self, name: str, reason: str) -> None:
        self.trace.steps.append(Step(name=name, detail={"skipped": reason}))


def _queries(reformulation: Reformulation) -> list[str]:
    return [q.strip() for q in [reformulation.standalone_query, *reformulation.expansions[:2]]
            if q and q.strip()]


def _citation(passage: Passage, snippet: str) -> Citation:
    return Citation(source_id=passage.source_id, chunk_id=passage.chunk_id, title=passage.title,
                    url=passage.url, snippet=snippet[:300], score=round(passage.score, 4))


def verify_or_extract(runtime: TurnRuntime, question: str, draft: DraftAnswer | None,
                      passages: list[Passage], evidence: Evidence, notes: list[str]
                      ) -> tuple[str, list[Citation]]:
    """Keep the draft when every sentence is supported; else an extractive, cited answer."""
    scorer = runtime.scorer
    if draft is not None and draft.answer.strip():
        support = scorer.support(draft.answer, [p.text for p in passages])
        if support and all(s.supported for s in support):
            used: list[int] = []
            for s in support:
                if s.passage_index is not None and s.passage_index not in used:
                    used.append(s.passage_index)
            citations = [_citation(passages[i], next(x.sentence for x in support
                                                     if x.passage_index == i)) for i in used]
            claimed = sorted(set(draft.passage_ids))
            actual = sorted(passages[i].pid for i in used)
            if claimed != actual:
                notes.append(f"citations from evidence {actual}, not the model's claim {claimed}")
            return draft.answer.strip(), citations
        weak = [s.sentence for s in support if not s.supported]
        notes.append(f"draft answer replaced: {len(weak)} unsupported sentence(s)" if weak
                     else "draft answer replaced: it has no sentence to check")
    order = sorted(range(len(passages)), key=lambda i: -evidence.relevance[i])
    ranked = [passages[i] for i in order]
    picked = scorer.extract(question, [p.text for p in ranked],
                            runtime.settings.evidence.extract_sentences)
    citations: list[Citation] = []
    parts = []
    for sentence, index in picked:
        passage = ranked[index]
        if passage.chunk_id not in [c.chunk_id for c in citations]:
            citations.append(_citation(passage, sentence))
        number = [c.chunk_id for c in citations].index(passage.chunk_id) + 1
        parts.append(f"{sentence} [{number}]")
    return " ".join(parts), citations


def run_turn(request: TurnRequest, runtime: TurnRuntime) -> TurnResult:
    """Answer one customer message; never raises for retrieval or model failures."""
    started = time.perf_counter()
    tracer = _Trace()
    settings = runtime.settings
    engine = runtime.engine
    engine.notes = []
    engine.manager_failed = False
    slots = dict(request.slots)
    if request.customer_id and "customer_id" not in slots:
        slots["customer_id"] = request.customer_id
    with UsageLedger.activate() as ledger:
        try:
            with tracer.step("context") as info:
                context = load_context(runtime.memory, request)
                save_pending(runtime.memory, request, context)
                info.update(history=len(context.history), entities=[
                    f"{e['type']}:{e['value']}" for e in context.entities[:8]],
                    memories=[m["session_id"] for m in context.memories])
            result = _answer(request, runtime, tracer, slots, context)
            result.turn_index = context.turn_index
            save_result(runtime.memory, request, context, result)
        except Exception as exc:  # retrieval or model down: an honest message, not a crash
            tracer.trace.notes.append(f"{type(exc).__name__}: {str(exc)[:200]}")
            result = TurnResult(session_id=request.session_id, verdict="error",
                                answer=settings.messages.connection_problem)
    trace = tracer.trace
    trace.notes.extend(engine.notes)
    trace.calls = [LlmCallTrace(role=c.role, prompt_tokens=c.prompt_tokens,
                                completion_tokens=c.completion_tokens, ms=round(c.ms, 1))
                   for c in ledger.calls]
    trace.llm_calls = len(ledger.calls)
    trace.prompt_tokens = ledger.prompt_tokens
    trace.completion_tokens = ledger.completion_tokens
    trace.duration_ms = round((time.perf_counter() - started) * 1000, 1)
    result.trace = trace
    return result


_CALL_RANK = {"sufficient": 2, "undecided": 1, "insufficient": 0}


def strongest_evidence(runtime: TurnRuntime, questions: list[str], passages: list[Passage]
                       ) -> tuple[str, Evidence]:
    """Assess each phrasing of the question; keep the one the evidence supports best."""
    best: tuple[str, Evidence] | None = None
    for text in dict.fromkeys(q for q in questions if q and q.strip()):
        evidence = assess(runtime.scorer, text, passages, runtime.settings.evidence)
        if best is None or (_CALL_RANK[evidence.call], evidence.best) > (
                _CALL_RANK[best[1].call], best[1].best):
            best = (text, evidence)
    assert best is not None
    return best


def _try_role(engine: Any, task: str, inputs: dict[str, str], output: type, tracer: _Trace
              ) -> Any:
    """A role's typed output, or None when the model gave nothing usable (noted in the trace).

    Evidence and the extractive path cover a failed role; only retrieval failures end a turn.
    """
    try:
        return engine.run_role(task, inputs, output)
    except Exception as exc:
        tracer.trace.notes.append(f"{task} failed ({type(exc).__name__}: {str(exc)[:160]})")
        return None


def _answer(request: TurnRequest, runtime: TurnRuntime, tracer: _Trace, slots: dict[str, str],
            context: MemoryContext) -> TurnResult:
    settings = runtime.settings
    engine = runtime.engine
    tool = KnowledgeBaseSearchTool.for_turn(runtime.retriever, slots, request.message,
                                            [e["value"] for e in context.entities[:8]])
    question, queries, advisory, hint = request.message, [], {}, ""
    pointed_at = referenced(request.message, context.entities)
    reformulate, reason = needs_reformulation(request.message, context.history, pointed_at)
    retrieval: RetrievalOutput | None = None
    evidence = Evidence("insufficient", [], 0.0)
    verdict, judgement = "insufficient", None
    for round_index in range(settings.max_rounds + 1):
        if reformulate or round_index > 0:
            with tracer.step("reformulate", round=round_index) as info:
                inputs = {"history": render_history(context.history),
                          "entities": context.entities_text(),
                          "message": request.message,
                          "rewrite_hint": f"Hint: {hint}" if hint else ""}
                reformulation = _try_role(engine, "reformulate", inputs, Reformulation,
                                          tracer) or Reformulation(standalone_query="")
                queries = _queries(reformulation)
                missing = [e for e in pointed_at
                           if not any(e["value"].lower() in q.lower() for q in queries)]
                if missing:  # entity memory names what the customer points at
                    named = ", ".join(f"{e['type']} {e['value']}" for e in missing)
                    queries.insert(0, f"{request.message} ({named})")
                    info["from_entity_memory"] = named
                for remembered in context.memories:  # the earlier case about the same entity
                    if any(e["value"] in remembered["summary"] for e in pointed_at):
                        queries.append(remembered["summary"])
                        info["from_long_term_memory"] = remembered["session_id"]
                        break
                advisory = reformulation.advisory_filters.as_dict()
                question = queries[0] if queries else request.message
                info.update(queries=queries, advisory_filters=advisory)
        else:
            tracer.skip("reformulate", reason)
        with tracer.step("retrieve", round=round_index) as info:
            retrieval = tool.search(queries, advisory)
            info.update(queries=retrieval.queries, filters=retrieval.filters,
                        ignored_filters=retrieval.ignored_filters, entities=retrieval.entities,
                        ids=[p.chunk_id for p in retrieval.passages],
                        via={p.chunk_id: p.via for p in retrieval.passages})
        with tracer.step("judge", round=round_index) as info:
            # a weak rewrite must not hide evidence the customer's own words find
            question, evidence = strongest_evidence(
                runtime, [question, request.message], retrieval.passages)
            info.update(evidence=evidence.call, relevance=[round(r, 3) for r in evidence.relevance],
                        coverage=evidence.coverage, question=question)
            judgement = None
            if retrieval.passages:
                judgement = _try_role(engine, "judge", {
                    "question": question, "passages": render_passages(retrieval.passages)},
                    Judgement, tracer)
                info["model"] = judgement.verdict if judgement else "failed"
            else:
                info["model"] = "skipped: no passages"
            verdict, note = decide(evidence, judgement, request.message)
            info.update(verdict=verdict, decided_by=note)
        if verdict != "insufficient" or round_index >= settings.max_rounds:
            break
        hint = (judgement.rewrite_hint or judgement.reason) if judgement else ""
    if verdict == "sufficient" and retrieval is not None:
        with tracer.step("respond") as info:
            draft = _try_role(engine, "respond", {
                "question": question, "passages": render_passages(retrieval.passages)},
                DraftAnswer, tracer)
            answer, citations = verify_or_extract(runtime, question, draft, retrieval.passages,
                                                  evidence, tracer.trace.notes)
            info.update(verified=not any("replaced" in n for n in tracer.trace.notes),
                        cited=[c.chunk_id for c in citations])
        if citations:
            return TurnResult(session_id=request.session_id, answer=answer, verdict="answered",
                              judge_verdict=verdict, citations=citations)
        tracer.trace.notes.append("no passage supports an answer")
    if verdict == "needs_human":
        tracer.skip("respond", "hand-off")
        return TurnResult(session_id=request.session_id, answer=settings.messages.handoff,
                          verdict="handoff", judge_verdict=verdict, handoff=True)
    tracer.skip("respond", f"verdict {verdict}: no grounded answer")
    return TurnResult(session_id=request.session_id, answer=settings.messages.no_results,
                      verdict="idk", judge_verdict=verdict)
