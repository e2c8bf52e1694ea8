"""Scoring answers: token overlap with gold evidence, the summary figures, calibration."""

import pytest

from evaluation.answers import calibration, overlap, summarise


def test_overlap_is_recall_of_the_gold_span_and_f1():
    recall, f1 = overlap("Refunds take 5 to 7 business days. [1]", "5 to 7 business days")
    assert recall == 1.0 and 0.7 < f1 < 1.0
    assert overlap("", "anything") == (0.0, 0.0)
    assert overlap("nothing shared here", "refund days") == (0.0, 0.0)


def row(answerable, verdict, right=False, probability=0.5, recall=None):
    return {
        "answerable": answerable,
        "verdict": verdict,
        "right_source": right,
        "probability": probability,
        "evidence_recall": recall,
        "evidence_f1": recall,
        "llm_calls": 0,
        "seconds": 0.1,
    }


def test_summary_counts_right_answers_wrong_sources_refusals_and_precision():
    rows = [
        row(True, "answered", True, 0.9, 1.0),
        row(True, "answered", False, 0.7, 0.0),
        row(True, "idk", probability=0.2, recall=0.0),
        row(False, "idk", probability=0.1),
        row(False, "answered", probability=0.8),
        row(False, "handoff", probability=0.3),
    ]
    summary = summarise(rows)
    assert summary["answered_right"] == pytest.approx(1 / 3, abs=1e-3)
    assert summary["wrong_source_answers"] == 2
    assert summary["refused_right"] == pytest.approx(2 / 3, abs=1e-3)
    assert summary["precision"] == pytest.approx(1 / 3, abs=1e-3)
    assert summary["evidence_recall"] == pytest.approx(1 / 3, abs=1e-3)


def test_calibration_bands_hold_every_scored_question_once():
    rows = [row(True, "answered", probability=p) for p in (0.05, 0.95, 1.0)] + [
        row(False, "idk", probability=0.5)
    ]
    bands = calibration(rows)
    assert sum(b["questions"] for b in bands) == 4
    assert bands[-1] == {"probability": "0.8-1.0", "questions": 2, "answerable": 1.0}
