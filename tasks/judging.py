"""The judge's verdict: evidence first, the model's opinion where evidence is undecided.

Usage::

    evidence = assess(scorer, question, passages, settings.evidence)
    verdict, note = decide(evidence.call, judgement, message)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from config.settings import EvidenceSettings
from tasks.evidence import EvidenceScorer
from tasks.schemas import EvidenceCall, Judgement, JudgeVerdict, Passage

_HUMAN = re.compile(
    r"\b(talk|speak|chat)\s+(to|with)\s+(a|an|some|your)?\s*(human|person|agent|representative|"
    r"someone|manager)\b|\b(real|live)\s+(person|human|agent)\b|\bhuman\s+(agent|support)\b",
    re.IGNORECASE,
)



@dataclass(frozen=True)
class Evidence:
    call: EvidenceCall
    relevance: list[float]
    coverage: float

    @property
    def best(self) -> float:
        return max(self.relevance, default=0.0)


def wants_human(message: str) -> bool:
    """The customer explicitly asks for a person."""
    return bool(_HUMAN.search(message))


def assess(scorer: EvidenceScorer, question: str, passages: list[Passage],
           thresholds: EvidenceSettings) -> Evidence:
    """Late-interaction relevance of each passage and the query-term coverage of all of them."""
    if not passages:
        return Evidence("insufficient", [], 0.0)
    relevance = scorer.relevance(question, [p.text for p in passages])
    bm25 = scorer.encoders.bm25
    query_terms = set(bm25.encode_query(question).indices)
    passage_terms: set[int] = set()
    for vector in bm25.encode_documents([p.text for p in passages]):
        passage_terms |= set(vector.indices)
    coverage = len(query_terms & passage_terms) / len(query_terms) if query_terms else 0.0
    best = max(relevance)
    if coverage >= thresholds.sufficient_coverage and best >= thresholds.sufficient_relevance:
        call: EvidenceCall = "sufficient"
    elif coverage < thresholds.insufficient_coverage or best < thresholds.insufficient_relevance:
        call = "insufficient"
    else:
        call = "undecided"
    return Evidence(call, relevance, round(coverage, 3))


def decide(evidence_call: EvidenceCall, judgement: Judgement | None, message: str
           ) -> tuple[JudgeVerdict, str]:
    """Combine evidence and the model's verdict; the note says who decided and why."""
    model = judgement.verdict if judgement else None
    if wants_human(message):
        return "needs_human", "the customer asked for a person"
    if evidence_call == "sufficient":
        if model not in (None, "sufficient"):
            return "sufficient", f"evidence overrides the model's {model!r}"
        return "sufficient", "evidence is sufficient"
    if model == "needs_human":
        return "needs_human", "the model asked for a human and evidence is not sufficient"
    if evidence_call == "insufficient":
        if model == "out_of_scope":
            return "out_of_scope", "evidence is insufficient; the model calls it out of scope"
        if model == "sufficient":
            return "insufficient", "evidence overrides the model's 'sufficient'"
        return "insufficient", "evidence is insufficient"
    if model is None:
        return "insufficient", "evidence undecided and no model verdict"
    return model, f"evidence undecided; the model's {model!r} decides"
