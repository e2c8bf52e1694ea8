"""Choose where the learned answerability model answers: its risk-coverage curve on dev data.

Questions we may tune on (never the doc2dial *test* pack):

* ``../shared/datasets/doc2dial-support-dev`` (real customer questions, answerable and not);
* ``examples/answer-sets/near-miss`` and ``examples/answer-sets/support-problems`` (written for
  supportcrew over examples/kb);
* for every answerable question, the same question with its answering documents taken out of
  the results (the way doc2dial's unanswerable questions were made: gold page removed).

Each question goes through the product's first-turn path: the turn's search under the set's
slots, then the gate (``tasks.judging.assess``) on the whole message and the one question it
wraps; the cited page is the passage the reading found. For every threshold: precision (answers
that cite a page that answers) and coverage (answerable questions answered with such a page).
``evidence.target_precision`` picks the threshold from this curve at load time.

    python bench/fit_answerability_gate.py [--data-dir DIR] [--dry-run]

Writes config/learned_answerability.yaml (unless --dry-run) and
bench/results/answerability_gate.{md,json}.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import yaml
from _common import ROOT, open_answer_set, table, write_results

from config.settings import AnswerabilityGate, load_settings
from evaluation.answers import risk_coverage
from tasks.judging import assess
from tasks.phrasings import first_turn_phrasings

DEV = ROOT.parent / "shared" / "datasets" / "doc2dial-support-dev"
SETS = [DEV, ROOT / "examples" / "answer-sets" / "near-miss",
        ROOT / "examples" / "answer-sets" / "support-problems"]
AUGMENT_DEPTH = 10
CURVE_POINTS = 41


def gate_row(opened: Any, question: str, passages: list
             ) -> tuple[float, str | None, dict[str, float]]:
    """The gate's best probability over the first-turn phrasings, the page it would cite,
    and the reading's features."""
    best: tuple[float, str | None, dict[str, float]] = (0.0, None, {})
    for phrasing in first_turn_phrasings(question):
        found = assess(opened.scorer, phrasing, passages, opened.settings.evidence)
        index = found.reading.passage_index if found.reading else None
        if index is not None and found.probability > best[0]:
            best = (found.probability, passages[index].source_id, found.reading.features)
    return best


def rows_for(directory: Path, data_dir: Path) -> list[dict[str, Any]]:
    """Gate rows of one answer set: every question, plus gold-removed twins."""
    settings = load_settings()
    opened = open_answer_set(directory, data_dir, settings.model_copy(update={
        "evidence": settings.evidence.model_copy(update={"gate": "learned"})}))
    rows = []
    for question in opened.answer_set.questions:
        probability, cited, features = gate_row(opened, question.question,
                                                opened.search(question.question))
        rows.append({"set": opened.answer_set.name, "id": question.id, "real": True,
                     "answerable": question.answerable, "question": question.question,
                     "probability": probability, "cited": cited, "features": features,
                     "right": question.answerable and cited in question.doc_ids})
        if question.answerable:
            deeper = opened.search(question.question, top_k=AUGMENT_DEPTH)
            kept = [p for p in deeper if p.source_id not in question.doc_ids]
            kept = kept[:opened.settings.retrieval.top_k]
            probability, cited, features = gate_row(opened, question.question, kept)
            rows.append({"set": opened.answer_set.name, "id": question.id, "real": False,
                         "answerable": False, "question": question.question,
                         "probability": probability, "cited": cited, "features": features,
                         "right": False})
    opened.close()
    return rows


def curve(rows: list[dict[str, Any]]) -> list[dict[str, float]]:
    """Precision and coverage of answers at evenly spaced thresholds (twins count as answers
    that cite a wrong page; coverage is over the real answerable questions)."""
    points = risk_coverage([{"answerable": r["answerable"], "probability": r["probability"],
                             "gate_source": r["cited"], "gate_right": r["right"]} for r in rows],
                           CURVE_POINTS)
    return [{k: p[k] for k in ("threshold", "precision", "coverage")} for p in points]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/supportcrew-answerability"))
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    rows = [row for directory in SETS if directory.exists()
            for row in rows_for(directory, args.data_dir / directory.name)]
    points = curve(rows)
    settings = load_settings()
    fitted = {"curve": points, "undecided_band": settings.evidence.learned.undecided_band,
              "fitted_on": f"{len(rows)} rows ({sum(r['real'] for r in rows)} real questions): "
                           + ", ".join(p.name for p in SETS if p.exists())
                           + " (+ gold-removed twins); bench/fit_answerability_gate.py"}
    chosen = AnswerabilityGate.model_validate(fitted).threshold_for(
        settings.evidence.target_precision)
    lines = ["# Answerability gate: risk-coverage on dev", "",
             fitted["fitted_on"] + ". Precision counts the twins' answers as wrong; coverage is "
             "over the real answerable questions.", "",
             f"At target precision {settings.evidence.target_precision}: threshold {chosen}.", "",
             *table(("threshold", "precision", "coverage"),
                    ((p["threshold"], p["precision"], p["coverage"]) for p in points)), ""]
    write_results("answerability_gate", lines, {"curve": points, "rows": rows,
                                                "threshold": chosen})
    if not args.dry_run:
        header = ("# The learned gate's risk-coverage curve on dev, written by "
                  "bench/fit_answerability_gate.py;\n# evidence.target_precision picks the "
                  "threshold from it. Do not edit by hand.\n")
        (ROOT / "config" / "learned_answerability.yaml").write_text(
            header + yaml.safe_dump(fitted, sort_keys=False, width=100))


if __name__ == "__main__":
    main()
