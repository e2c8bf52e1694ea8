"""Measure answers on a labelled question set: each question is the first turn of a new session.

Per question: the verdict, the cited sources, whether a cited source answers it, the gate's
probability, LLM calls and seconds, and (where the set gives gold ``evidence`` spans) token
recall and F1 of the answer against them. The summary holds the figures a support lead asks
for: answered right, answers citing a wrong source, refusals right, precision of answers, and
the calibration of the gate's probability.

Usage::

    report = evaluate_answers(runtime, load_answer_set(Path("../shared/datasets/doc2dial-support-dev")))
    report.summary["answered_right"], report.summary["refused_right"]
    report.curve          # precision and coverage per threshold of the gate
    plot_risk_coverage({"dev": report.curve}, Path("curve.png"))
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
from evaluation.answer_sets import AnswerSet, LabelledQuestion
from storage.text import WORD_CHARS
from tasks.schemas import TurnRequest, TurnResult

_ARTICLES = frozenset({"a", "an", "the"})
_CITATION = re.compile(r"\s*\[\d+\]")
CALIBRATION_BINS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0001)


def answer_tokens(text: str) -> list[str]:
    """SQuAD-style tokens: lower case, punctuation and articles dropped, citations removed."""
    return [t for t in WORD_CHARS.findall(_CITATION.sub("", text).lower()) if t not in _ARTICLES]


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
    evidence = result.trace.last_evidence() if result.trace else None
    return evidence.probability if evidence is not None else None


def gate_source(result: TurnResult) -> str:
    """The page the last evidence gate found answering (what an answer would cite)."""
    evidence = result.trace.last_evidence() if result.trace else None
    return evidence.source_id if evidence is not None else ""


@dataclass
class AnswerReport:
    name: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    calibration: list[dict[str, Any]] = field(default_factory=list)
    curve: list[dict[str, float]] = field(default_factory=list)


def score_turn(question: LabelledQuestion, result: TurnResult) -> dict[str, Any]:
    cited = list(dict.fromkeys(c.source_id for c in result.citations))
    answered = result.verdict == "answered"
    right_source = answered and any(s in question.doc_ids for s in cited)
    recall = f1 = None
    if question.answerable and question.evidence:
        recall, f1 = overlap(result.answer if answered else "", " ".join(question.evidence))
    trace = result.trace
    source = gate_source(result)
    return {
        "id": question.id,
        "question": question.question,
        "answerable": question.answerable,
        "doc_ids": list(question.doc_ids),
        "verdict": result.verdict,
        "cited": cited,
        "right_source": right_source,
        "probability": gate_probability(result),
        "answer": result.answer,
        "gate_source": source,
        "gate_right": question.answerable and source in question.doc_ids,
        "evidence_recall": recall,
        "evidence_f1": f1,
        "llm_calls": trace.llm_calls if trace else 0,
        # the gate's reading and the extractive answer's quote (their wall time)
        "gate_ms": trace.ms_in("evidence_gate", "verify") if trace else 0.0,
        "seconds": round(trace.duration_ms / 1000, 3) if trace else 0.0,
    }


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
        "questions": len(rows),
        "answerable": len(answerable),
        "unanswerable": len(unanswerable),
        "answered_right": share(right, answerable),
        "wrong_source_answers": len([r for r in answered if not r["right_source"]]),
        "refused_right": share([r for r in unanswerable if r["verdict"] != "answered"], unanswerable),
        "precision": share([r for r in answered if r["right_source"]], answered),
        # the decision's chosen page is a gold one, answered or not
        "page_choice": share([r for r in answerable if r.get("gate_right")], answerable),
        # "this article may help": never an answer; how often, and how often the page answers
        "suggested": len([r for r in rows if r["verdict"] == "suggest"]),
        "suggested_right": len(
            [
                r
                for r in answerable
                if r["verdict"] == "suggest" and any(s in r.get("doc_ids", ()) for s in r["cited"])
            ]
        ),
        "evidence_recall": round(statistics.mean(recalls), 3) if recalls else None,
        "evidence_f1": round(statistics.mean(f1s), 3) if f1s else None,
        "llm_calls": round(statistics.mean(r["llm_calls"] for r in rows), 2) if rows else 0,
        "p50_s": percentile(seconds, 0.5),
        "p95_s": percentile(seconds, 0.95),
        "answered_p50_s": percentile([r["seconds"] for r in answered], 0.5),
        "gate_ms_p50": percentile([r.get("gate_ms", 0.0) for r in rows], 0.5),
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


def risk_coverage(rows: list[dict[str, Any]], points: int = 21) -> list[dict[str, float]]:
    """What the gate would give at each threshold: precision of answers (they cite the page
    the gate found) and coverage (answerable questions answered with a page that answers)."""
    answerable = [r for r in rows if r["answerable"]]
    curve = []
    for step in range(points):
        threshold = round(step / (points - 1), 3)
        answered = [
            r
            for r in rows
            if r.get("gate_source") and r["probability"] is not None and r["probability"] >= threshold
        ]
        right = [r for r in answered if r["gate_right"]]
        curve.append(
            {
                "threshold": threshold,
                "precision": round(len(right) / len(answered), 3) if answered else 1.0,
                "coverage": round(len(right) / len(answerable), 3) if answerable else 0.0,
                "answered": len(answered),
            }
        )
    return curve


def plot_risk_coverage(
    curves: dict[str, list[dict[str, float]]],
    path: Path,
    marks: dict[str, float] | None = None,
    title: str = "",
) -> Path:
    """Precision against coverage, one line per curve (and a dot at each operating point)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(6, 4.5))
    for label, curve in curves.items():
        axes.plot(
            [p["coverage"] for p in curve], [p["precision"] for p in curve], marker=".", label=label
        )
        at = (marks or {}).get(label)
        if at is not None:  # the operating point: the first threshold at or above it
            point = next((p for p in curve if p["threshold"] >= at), curve[-1])
            axes.scatter([point["coverage"]], [point["precision"]], s=80, zorder=3)
    axes.set_xlabel("coverage: answerable questions answered with a right page")
    axes.set_ylabel("precision of answers")
    axes.set_xlim(0, 1.02)
    axes.set_ylim(0, 1.02)
    axes.grid(alpha=0.3)
    axes.legend(loc="lower left")
    axes.set_title(title or "answerability gate: risk-coverage")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    pyplot.close(figure)
    return path


def calibration(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Share of answerable questions per band of the gate's probability."""
    bands = []
    for low, high in pairwise(CALIBRATION_BINS):
        inside = [r for r in rows if r["probability"] is not None and low <= r["probability"] < high]
        bands.append(
            {
                "probability": f"{low:.1f}-{min(high, 1.0):.1f}",
                "questions": len(inside),
                "answerable": round(sum(r["answerable"] for r in inside) / len(inside), 3)
                if inside
                else None,
            }
        )
    return bands


def answer_set_settings(settings: Settings, name: str, data_dir: Path) -> Settings:
    """Each answer set in its own collection (and, embedded, its own store under the data dir)."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", name)[:40] or "set"
    update: dict[str, Any] = {"collection": f"answers-{slug}"}
    if not settings.qdrant.url:
        update["path"] = Path(data_dir) / "eval" / slug / "qdrant"
    return settings.model_copy(update={"qdrant": settings.qdrant.model_copy(update=update)})


def evaluate_answers(
    runtime: TurnRuntime,
    answer_set: AnswerSet,
    limit: int | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> AnswerReport:
    """Ask every question (up to ``limit``) as a new conversation and score the answers."""
    report = AnswerReport(answer_set.name)
    run = uuid.uuid4().hex[:8]
    for question in answer_set.questions[:limit]:
        request = TurnRequest(
            session_id=f"eval-{run}-{question.id}",
            message=question.question,
            slots=dict(answer_set.slots),
        )
        row = score_turn(question, run_turn(request, runtime))
        report.rows.append(row)
        if on_row:
            on_row(row)
    report.summary = summarise(report.rows)
    report.calibration = calibration(report.rows)
    report.curve = risk_coverage(report.rows)
    return report
