"""Measure answers on a labelled question set: each question is the first turn of a new session.

Per question: the verdict, the cited sources, whether a cited source answers it, the gate's
probability, LLM calls and seconds, and (where the set gives gold ``evidence`` spans) token
recall and F1 of the answer against them. The summary holds the figures a support lead asks
for: answered right, answers citing a wrong source, refusals right, precision of answers, and
the calibration of the gate's probability.

Usage::

    report = evaluate_answers(runtime, load_answer_set(Path("../shared/datasets/doc2dial-support-dev")))
    report.summary["answered_right"], report.summary["refused_right"]
"""

from __future__ import annotations

import math
import re
import statistics
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from agents.runtime import TurnRuntime
from agents.turn import run_turn
from config.settings import Settings
from storage.retrieval.answer_sets import AnswerSet, LabelledQuestion
from tasks.schemas import TurnRequest, TurnResult

_TOKEN = re.compile(r"\w+")
_ARTICLES = frozenset({"a", "an", "the"})
_CITATION = re.compile(r"\s*\[\d+\]")
CALIBRATION_BINS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0001)


def answer_tokens(text: str) -> list[str]:
    """SQuAD-style tokens: lower case, punctuation and articles dropped, citations removed."""
    return [t for t in _TOKEN.findall(_CITATION.sub("", text).lower()) if t not in _ARTICLES]


def overlap(answer: str, gold: str) -> tuple[float, float]:
    """(token recall of ``gold`` in ``answer``, token F1)."""
    said, wanted = answer_tokens(answer), answer_tokens(gold)
    if not said or not wanted:
        return 0.0, 0.0
    common = sum((Counter(said) & Counter(wanted)).values())
    if not common:
        return 0.0, 0.0
    recall, precision = common / len(wanted), common / len(said)
    return recall, 2 * recall * precision / (recall + precision)


def gate_probability(result: TurnResult) -> float | None:
    """The answerability gate's probability on the turn's last evidence gate, if it ran."""
    steps = [s for s in result.trace.steps if s.name == "evidence_gate"] if result.trace else []
    value = steps[-1].detail.get("answerable") if steps else None
    return float(value) if value is not None else None


@dataclass
class AnswerReport:
    name: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    calibration: list[dict[str, Any]] = field(default_factory=list)


def score_turn(question: LabelledQuestion, result: TurnResult) -> dict[str, Any]:
    cited = list(dict.fromkeys(c.source_id for c in result.citations))
    answered = result.verdict == "answered"
    right_source = answered and any(s in question.doc_ids for s in cited)
    recall = f1 = None
    if question.answerable and question.evidence:
        recall, f1 = overlap(result.answer if answered else "", " ".join(question.evidence))
    trace = result.trace
    return {"id": question.id, "question": question.question, "answerable": question.answerable,
            "verdict": result.verdict, "cited": cited, "right_source": right_source,
            "probability": gate_probability(result), "answer": result.answer,
            "evidence_recall": recall, "evidence_f1": f1,
            "llm_calls": trace.llm_calls if trace else 0,
            "seconds": round(trace.duration_ms / 1000, 3) if trace else 0.0}


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    answered = [r for r in rows if r["verdict"] == "answered"]
    right = [r for r in answerable if r["right_source"]]
    recalls = [r["evidence_recall"] for r in answerable if r["evidence_recall"] is not None]
    f1s = [r["evidence_f1"] for r in answerable if r["evidence_f1"] is not None]
    seconds = sorted(r["seconds"] for r in rows)

    def share(part: Iterable[Any], whole: list[Any]) -> float | None:
        return round(len(list(part)) / len(whole), 3) if whole else None

    return {
        "questions": len(rows), "answerable": len(answerable), "unanswerable": len(unanswerable),
        "answered_right": share(right, answerable),
        "wrong_source_answers": len([r for r in answered if not r["right_source"]]),
        "refused_right": share([r for r in unanswerable if r["verdict"] != "answered"],
                               unanswerable),
        "precision": share([r for r in answered if r["right_source"]], answered),
        "evidence_recall": round(statistics.mean(recalls), 3) if recalls else None,
        "evidence_f1": round(statistics.mean(f1s), 3) if f1s else None,
        "llm_calls": round(statistics.mean(r["llm_calls"] for r in rows), 2) if rows else 0,
        "p50_s": percentile(seconds, 0.5),
        "p95_s": percentile(seconds, 0.95),
    }


def percentile(values: Iterable[float], share: float) -> float:
    """Nearest-rank percentile (0.0 for no values).

    >>> percentile([0.1, 0.3, 0.2], 0.5), percentile([0.24, 0.19], 0.95), percentile([], 0.5)
    (0.2, 0.24, 0.0)
    """
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def calibration(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Share of answerable questions per band of the gate's probability."""
    bands = []
    for low, high in pairwise(CALIBRATION_BINS):
        inside = [r for r in rows if r["probability"] is not None and low <= r["probability"] < high]
        bands.append({"probability": f"{low:.1f}-{min(high, 1.0):.1f}", "questions": len(inside),
                      "answerable": round(sum(r["answerable"] for r in inside) / len(inside), 3)
                      if inside else None})
    return bands


def answer_set_settings(settings: Settings, name: str, data_dir: Path) -> Settings:
    """Each answer set in its own collection (and, embedded, its own store under the data dir)."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", name)[:40] or "set"
    update: dict[str, Any] = {"collection": f"answers-{slug}"}
    if not settings.qdrant.url:
        update["path"] = Path(data_dir) / "eval" / slug / "qdrant"
    return settings.model_copy(update={"qdrant": settings.qdrant.model_copy(update=update)})


def evaluate_answers(runtime: TurnRuntime, answer_set: AnswerSet, limit: int | None = None,
                     on_row: Callable[[dict[str, Any]], None] | None = None) -> AnswerReport:
    """Ask every question (up to ``limit``) as a new conversation and score the answers."""
    report = AnswerReport(answer_set.name)
    run = uuid.uuid4().hex[:8]
    for question in answer_set.questions[:limit]:
        request = TurnRequest(session_id=f"eval-{run}-{question.id}", message=question.question,
                              slots=dict(answer_set.slots))
        row = score_turn(question, run_turn(request, runtime))
        report.rows.append(row)
        if on_row:
            on_row(row)
    report.summary = summarise(report.rows)
    report.calibration = calibration(report.rows)
    return report
