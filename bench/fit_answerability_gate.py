"""Choose where the answer decision answers and which page: its curves on dev data.

Questions we may tune on (never the doc2dial *test* pack):

* ``../shared/datasets/doc2dial-support-dev`` (real customer questions, answerable and not);
* ``examples/answer-sets/near-miss``, ``support-problems`` and ``support-requests`` (written
  for supportcrew over examples/kb);
* for every answerable question, the same question with its answering documents taken out of
  the results (the way doc2dial's unanswerable questions were made: gold page removed).

Each question goes through the product's first-turn path: the turn's search under the set's
slots, then the gate (``tasks.judging.assess``) on the whole message and the one question it
wraps, which gives a probability per candidate passage in retrieval order. The page margin
(``evidence.learned.page_margin``: how much better a lower-ranked page must read to answer
instead of the top-ranked one) is chosen first, as the smallest margin with the most
answerable questions whose chosen page answers; then, for every threshold: precision
(answers that cite a page that answers) and coverage (answerable questions answered with such
a page). ``evidence.target_precision`` picks the threshold from this curve at load time.

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
from tasks.learned_answerability import choose_page
from tasks.operating_points import threshold_for
from tasks.phrasings import first_turn_phrasings

DEV = ROOT.parent / "shared" / "datasets" / "doc2dial-support-dev"
SETS = [
    DEV,
    ROOT / "examples" / "answer-sets" / "near-miss",
    ROOT / "examples" / "answer-sets" / "support-problems",
    ROOT / "examples" / "answer-sets" / "support-requests",
]
AUGMENT_DEPTH = 10
CURVE_POINTS = 41


MARGINS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0)


def candidates(opened: Any, question: str, passages: list) -> list[list[tuple[str, float]]]:
    """Per first-turn phrasing: (page, probability) of each candidate passage, in retrieval
    order (the decision's reading before it chooses a page)."""
    found = []
    for phrasing in first_turn_phrasings(question):
        evidence = assess(opened.scorer, phrasing, passages, opened.settings.evidence)
        pages = evidence.reading.pages if evidence.reading else {}
        found.append([(passages[i].source_id, p) for i, p in sorted(pages.items())])
    return found


def decided(found: list[list[tuple[str, float]]], margin: float) -> tuple[float, str | None]:
    """The decision at ``margin``: the best probability over the phrasings and its page."""
    best: tuple[float, str | None] = (0.0, None)
    for pages in found:
        if pages:
            chosen = choose_page([p for _, p in pages], margin)
            if pages[chosen][1] > best[0]:
                best = (pages[chosen][1], pages[chosen][0])
    return best


def rows_for(directory: Path, data_dir: Path) -> list[dict[str, Any]]:
    """Candidate readings of one answer set: every question, plus gold-removed twins."""
    opened = open_answer_set(directory, data_dir, load_settings())
    rows = []
    for question in opened.answer_set.questions:
        rows.append(
            {
                "set": opened.answer_set.name,
                "id": question.id,
                "real": True,
                "answerable": question.answerable,
                "question": question.question,
                "doc_ids": list(question.doc_ids),
                "found": candidates(opened, question.question, opened.search(question.question)),
            }
        )
        if question.answerable:
            deeper = opened.search(question.question, top_k=AUGMENT_DEPTH)
            kept = [p for p in deeper if p.source_id not in question.doc_ids]
            kept = kept[: opened.settings.retrieval.top_k]
            rows.append(
                {
                    "set": opened.answer_set.name,
                    "id": question.id,
                    "real": False,
                    "answerable": False,
                    "question": question.question,
                    "doc_ids": [],
                    "found": candidates(opened, question.question, kept),
                }
            )
    opened.close()
    return rows


def at_margin(rows: list[dict[str, Any]], margin: float) -> list[dict[str, Any]]:
    """Each row's probability, cited page and rightness when pages are chosen at ``margin``."""
    out = []
    for row in rows:
        probability, cited = decided(row["found"], margin)
        out.append(
            {
                **row,
                "probability": round(probability, 4),
                "cited": cited,
                "right": row["answerable"] and cited in row["doc_ids"],
            }
        )
    return out


def choose_margin(rows: list[dict[str, Any]]) -> tuple[float, dict[float, int]]:
    """The smallest margin with the most answerable questions whose chosen page answers."""
    right = {m: sum(r["right"] for r in at_margin(rows, m) if r["real"]) for m in MARGINS}
    best = max(right.values())
    return min(m for m, n in right.items() if n == best), right


def curve(rows: list[dict[str, Any]]) -> list[dict[str, float]]:
    """Precision and coverage of answers at evenly spaced thresholds, over the real questions
    (the gold-removed twins are reported beside it: on examples/kb another page often does
    answer a twin, so counting each as a wrong answer understated precision)."""
    points = risk_coverage(
        [
            {
                "answerable": r["answerable"],
                "probability": r["probability"],
                "gate_source": r["cited"],
                "gate_right": r["right"],
            }
            for r in rows
            if r["real"]
        ],
        CURVE_POINTS,
    )
    return [{k: p[k] for k in ("threshold", "precision", "coverage")} for p in points]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/supportcrew-answerability"))
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    found = [
        row
        for directory in SETS
        if directory.exists()
        for row in rows_for(directory, args.data_dir / directory.name)
    ]
    margin, right_by_margin = choose_margin(found)
    rows = at_margin(found, margin)
    points = curve(rows)
    settings = load_settings()
    real = [r for r in rows if r["real"]]
    fitted = {
        "curve": points,
        "undecided_band": settings.evidence.learned.undecided_band,
        "page_margin": margin,
        "fitted_on": f"{len(real)} real questions of "
        + ", ".join(p.name for p in SETS if p.exists())
        + "; bench/fit_answerability_gate.py",
    }
    chosen = threshold_for(
        AnswerabilityGate.model_validate(fitted).curve, settings.evidence.target_precision
    )
    twins = [r for r in rows if not r["real"]]
    twins_answered = sum(r["probability"] >= chosen for r in twins)
    lines = [
        "# Answerability gate: risk-coverage on dev",
        "",
        fitted["fitted_on"] + ". Precision: answers that cite a page that answers; "
        "coverage: answerable questions answered with such a page.",
        "",
        f"At target precision {settings.evidence.target_precision}: threshold {chosen}. "
        f"Gold-removed twins (the answering pages taken out of the results) answered at "
        f"it: {twins_answered}/{len(twins)}.",
        "",
        f"Page margin {margin}: answerable questions whose chosen page answers, by margin: "
        + ", ".join(f"{m}: {n}" for m, n in right_by_margin.items()),
        "",
        *table(
            ("threshold", "precision", "coverage"),
            ((p["threshold"], p["precision"], p["coverage"]) for p in points),
        ),
        "",
    ]
    write_results(
        "answerability_gate",
        lines,
        {
            "curve": points,
            "rows": rows,
            "threshold": chosen,
            "page_margin": margin,
            "right_by_margin": right_by_margin,
        },
    )
    if not args.dry_run:
        header = (
            "# The learned gate's risk-coverage curve on dev, written by "
            "bench/fit_answerability_gate.py;\n# evidence.target_precision picks the "
            "threshold from it. Do not edit by hand.\n"
        )
        (ROOT / "config" / "learned_answerability.yaml").write_text(
            header + yaml.safe_dump(fitted, sort_keys=False, width=100)
        )


if __name__ == "__main__":
    main()
