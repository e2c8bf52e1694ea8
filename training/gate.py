"""Fit the answerability gate on data we may tune on, and write storage/kb/assets/decision/gate.yaml.

Training questions (never the doc2dial *test* pack):

* ``../shared/datasets/doc2dial-support-dev`` (20 answerable, 11 unanswerable real questions);
* ``examples/answer-sets/near-miss``, ``support-problems`` and ``support-requests`` (questions
  over examples/kb written for supportcrew);
* for every answerable question, the same question with its answering documents taken out of
  the results (the way doc2dial's unanswerable questions were made: gold page removed).

Features come from the product path: the turn's search under the set's slots, then the
decision (``tasks.decision.assess``: the window reading of the page the page choice chooses,
the learned cross-encoder's reading of that page, ``learned``, and whether it explains the
code asked about, ``code_explained`` / ``code_unexplained``). A
scikit-learn logistic regression on standardised features is scored by leave-one-question-out
cross-validation (a question and its gold-removed twin are held out together); the subset
with the most held-out real questions right (at the middle of the gap between the classes)
is fitted on every row.

Where it answers (``answer_at``) is chosen on the product's own turn with the fitted model,
on two risk-coverage curves: every real question of the four sets as the first turn of a new
conversation (``main.py eval answers``), and every turn of ``examples/kickoff/
conversations.yaml`` and ``follow-ups.yaml`` that expects a verdict (follow-ups and near
misses read in their conversation). ``answer_at`` is the lowest threshold from which every
point of both reaches ``evidence.target_precision`` (the share of answers that cite a page
that answers); ``refuse_below`` the same for ``target_precision - UNDECIDED_DROP``. Between
them the evidence is undecided: a judge model is asked (its "sufficient" counts only through
a draft that passes the support check) or, without one, the page is offered as "this
article may help" (verdict ``suggest``, never an answer).

    python -m training.gate [--data-dir DIR] [--features a,b,...] [--dry-run]

Writes storage/kb/assets/decision/gate.yaml (unless --dry-run) and bench/results/answerability.{md,json}.
"""

from __future__ import annotations

import argparse
import itertools
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import LeaveOneGroupOut

from config.settings import (
    FITTED_ANSWERABILITY,
    LEARNED_FEATURE,
    AnswerabilityModel,
    OperatingPoint,
    Settings,
    load_settings,
)
from config.telemetry import apply_telemetry_policy
from evaluation.answers import risk_coverage
from evaluation.dev_runs import OpenedSet, open_answer_set, product_rows, run_scripts
from evaluation.reporting import DATASETS, ROOT, table, write_results
from tasks.answerability import FEATURES
from tasks.decision import CODE_EXPLAINED, CODE_UNEXPLAINED, assess
from tasks.operating_points import threshold_for

DEV = DATASETS / "doc2dial-support-dev"
SETS = [
    DEV,
    *(
        ROOT / "examples" / "answer-sets" / name
        for name in ("near-miss", "support-problems", "support-requests")
    ),
]
CURVE_POINTS = 41
UNDECIDED_DROP = 0.05  # refuse_below: where the curve's precision is this much below the target
# examples/kickoff, written by us: the follow-ups and near misses, and the dev dialogues
CONVERSATIONS = (
    "conversations.yaml",
    "follow-ups.yaml",
    "kb-dev-conversations.yaml",
    "doc2dial-dev-conversations.yaml",
)
# three window-reading features, the learned model's reading and the codes the page explains;
# the best subset of a search over the four sets (window_similarity, section_coverage,
# coverage, learned) lost three follow-ups of examples/kickoff/follow-ups.yaml, which the
# weights' fit does not see
SHIPPED_FEATURES = (
    "section_coverage",
    "passage_relevance",
    "missing_rare",
    LEARNED_FEATURE,
    CODE_EXPLAINED,
    CODE_UNEXPLAINED,
)
ALL_FEATURES = (*FEATURES, LEARNED_FEATURE, CODE_EXPLAINED, CODE_UNEXPLAINED)
AUGMENT_DEPTH = 10


def features_of(opened: OpenedSet, question: str, passages: list) -> dict[str, float]:
    """The gate's features of the page the product's decision chooses
    (``tasks.decision.assess``)."""
    found = assess(opened.scorer, question, passages, opened.settings.evidence)
    features = found.reading.features if found.reading else {}
    return {name: features.get(name, 0.0) for name in ALL_FEATURES}


def rows_for(directory: Path, data_dir: Path) -> list[dict]:
    """Feature rows of one answer set: every question, plus gold-removed twins."""
    opened = open_answer_set(directory, data_dir)
    rows = []
    for question in opened.answer_set.questions:
        found = opened.search(question.question)
        rows.append(
            {
                "set": opened.answer_set.name,
                "id": question.id,
                "real": True,
                "answerable": question.answerable,
                "question": question.question,
                "top_gold": bool(found) and found[0].source_id in question.doc_ids,
                **features_of(opened, question.question, found),
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
                    "top_gold": False,
                    **features_of(opened, question.question, kept),
                }
            )
    opened.close()
    return rows


def with_model(settings: Settings, fitted: dict) -> Settings:
    model = AnswerabilityModel.model_validate(fitted)
    return settings.model_copy(
        update={"evidence": settings.evidence.model_copy(update={"answerability": model})}
    )


def conversation_turns(settings: Settings, data_dir: Path) -> list[dict]:
    """Every turn of the conversation scripts that expects a verdict and reached the evidence
    gate, through the product's turn (follow-ups read with their conversation, returning
    customers with their memory): its gate's probability, the page it read, and whether that
    page is one the script expects. ``data_dir`` starts empty: no memory of a run before."""
    shutil.rmtree(data_dir, ignore_errors=True)
    return [
        {**turn, "answerable": turn["want"] == "answered"}
        for turn in run_scripts("crewai", list(CONVERSATIONS), data_dir, settings)
        if turn["probability"] is not None
    ]


def product_curves(settings: Settings, fitted: dict, data_dir: Path) -> dict[str, list[dict]]:
    """Risk-coverage curves of the product's turn with the ``fitted`` gate: the real questions
    of every set pooled, each the first turn of a new conversation, and the conversation
    scripts' turns."""
    gated = with_model(settings, fitted)
    first_turns = [
        row
        for directory in SETS
        if directory.exists()
        for row in product_rows(directory, data_dir, "crewai", settings=gated)
    ]
    return {
        "first turns": risk_coverage(first_turns, CURVE_POINTS),
        "conversations": risk_coverage(
            conversation_turns(gated, data_dir / "conversations"), CURVE_POINTS
        ),
    }


def threshold_on_all(curves: dict[str, list[dict]], precision: float) -> float:
    """The lowest threshold from which every point of every curve reaches ``precision``."""
    return max(
        threshold_for(
            [OperatingPoint(**{k: p[k] for k in ("threshold", "precision", "coverage")}) for p in c],
            precision,
        )
        for c in curves.values()
    )


def cross_validated(rows: list[dict], features: list[str], c: float) -> np.ndarray:
    x = np.array([[r[f] for f in features] for r in rows])
    y = np.array([r["answerable"] for r in rows])
    groups = [f"{r['set']}/{r['id']}" for r in rows]
    held_out = np.zeros(len(rows))
    for train, test in LeaveOneGroupOut().split(x, y, groups):
        model = _fit(x[train], y[train], c)
        held_out[test] = _probability(model, x[test])
    return held_out


def _fit(x: np.ndarray, y: np.ndarray, c: float) -> dict:
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
    regression = LogisticRegression(C=c, class_weight="balanced", max_iter=1000)
    regression.fit((x - mean) / scale, y)
    return {
        "mean": mean,
        "scale": scale,
        "weights": regression.coef_[0],
        "bias": float(regression.intercept_[0]),
    }


def _probability(model: dict, x: np.ndarray) -> np.ndarray:
    z = model["bias"] + ((x - model["mean"]) / model["scale"]) @ model["weights"]
    return 1.0 / (1.0 + np.exp(-z))


def rates(rows: list[dict], probability: np.ndarray, threshold: float) -> dict[str, float]:
    """On the real questions: answerable ones let through, unanswerable ones refused."""
    real = [(r, p) for r, p in zip(rows, probability, strict=True) if r["real"]]
    answerable = [p >= threshold for r, p in real if r["answerable"]]
    refused = [p < threshold for r, p in real if not r["answerable"]]
    passed_right = [p >= threshold and r["top_gold"] for r, p in real if r["answerable"]]
    return {
        "answerable_passed": round(float(np.mean(answerable)), 3),
        "answerable_passed_top_gold": round(float(np.mean(passed_right)), 3),
        "unanswerable_refused": round(float(np.mean(refused)), 3),
    }


def operating_point(rows: list[dict], probability: np.ndarray) -> float:
    """The middle of the widest run of thresholds with the best balanced accuracy on the real
    questions (the middle of the gap between the classes, not its edge)."""
    candidates = sorted({round(float(p), 3) for p in probability} | {0.5})

    def balanced(t: float) -> float:
        found = rates(rows, probability, t)
        return round(found["answerable_passed"] + found["unanswerable_refused"], 6)

    best = max(balanced(t) for t in candidates)
    runs: list[list[float]] = []
    for threshold in candidates:
        if balanced(threshold) == best:
            if runs and runs[-1][-1] == candidates[candidates.index(threshold) - 1]:
                runs[-1].append(threshold)
            else:
                runs.append([threshold])
    widest = max(runs, key=lambda run: run[-1] - run[0])
    following = [t for t in candidates if t > widest[-1]]
    upper = following[0] if following else widest[-1]
    return round((widest[0] + upper) / 2, 3)


def main() -> None:
    apply_telemetry_policy()  # where the training process starts
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/supportcrew-answerability"))
    parser.add_argument(
        "--features",
        default=",".join(SHIPPED_FEATURES),
        help="comma-separated (default: %(default)s); 'search' ranks every subset of 2-4",
    )
    parser.add_argument("--c", type=float, default=1.0, help="inverse regularisation strength")
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    rows = [
        row
        for directory in SETS
        if directory.exists()
        for row in rows_for(directory, args.data_dir / directory.name)
    ]
    candidates = ALL_FEATURES
    subsets = (
        [list(s) for n in (2, 3, 4) for s in itertools.combinations(candidates, n)]
        if args.features == "search"
        else [args.features.split(",")]
    )
    ranking: list[dict[str, Any]] = []
    for subset in subsets:
        held_out = cross_validated(rows, subset, args.c)
        threshold = operating_point(rows, held_out)
        ranking.append({"features": subset, "threshold": threshold, **rates(rows, held_out, threshold)})
    ranking.sort(
        key=lambda t: (
            -(t["answerable_passed_top_gold"] + t["unanswerable_refused"]),
            len(t["features"]),
        )
    )
    best = ranking[0]
    x = np.array([[r[f] for f in best["features"]] for r in rows])
    model = _fit(x, np.array([r["answerable"] for r in rows]), args.c)
    fitted = {
        "features": best["features"],
        "mean": [round(float(v), 5) for v in model["mean"]],
        "scale": [round(float(v), 5) for v in model["scale"]],
        "weights": [round(float(v), 5) for v in model["weights"]],
        "bias": round(model["bias"], 5),
        "answer_at": best["threshold"],
        "refuse_below": best["threshold"],
    }
    settings = load_settings()
    target = settings.evidence.target_precision
    curves = product_curves(settings, fitted, args.data_dir / "product")
    fitted["answer_at"] = threshold_on_all(curves, target)
    fitted["refuse_below"] = min(fitted["answer_at"], threshold_on_all(curves, target - UNDECIDED_DROP))
    fitted["fitted_on"] = (
        f"{len(rows)} rows: "
        + ", ".join(p.name for p in SETS if p.exists())
        + f" (+ gold-removed twins); answer_at / refuse_below: product turn, precision {target}"
        + f" / {target - UNDECIDED_DROP:.2f}; "
        "training/gate.py"
    )
    lines = [
        "# Answerability gate: feature subsets, leave-one-question-out",
        "",
        f"{len(rows)} rows ({sum(r['real'] for r in rows)} real questions). Rates on the "
        "real questions, held out; threshold = middle of the best balanced accuracy.",
        "",
        *table(
            (
                "features",
                "threshold",
                "answerable passed",
                "passed, top passage gold",
                "unanswerable refused",
            ),
            (
                (
                    ", ".join(t["features"]),
                    t["threshold"],
                    t["answerable_passed"],
                    t["answerable_passed_top_gold"],
                    t["unanswerable_refused"],
                )
                for t in ranking[:15]
            ),
        ),
        "",
        "Chosen: " + ", ".join(best["features"]),
        "",
        f"Product turn (precision / coverage per threshold): the {sum(r['real'] for r in rows)} "
        "real questions pooled, each a first turn, and the conversation scripts' turns; "
        f"answer_at {fitted['answer_at']}: both reach {target}; refuse_below "
        f"{fitted['refuse_below']}: both reach {target - UNDECIDED_DROP:.2f}.",
        "",
        *table(
            ("threshold", *curves),
            (
                (
                    point["threshold"],
                    *(f"{c[i]['precision']} / {c[i]['coverage']}" for c in curves.values()),
                )
                for i, point in enumerate(curves["first turns"])
                if i % 2 == 0
            ),
        ),
        "",
    ]
    write_results(
        "answerability", lines, {"model": fitted, "table": ranking, "curves": curves, "rows": rows}
    )
    if not args.dry_run:
        header = "# Fitted by training/gate.py; do not edit by hand.\n"
        FITTED_ANSWERABILITY.write_text(header + yaml.safe_dump(fitted, sort_keys=False, width=100))


if __name__ == "__main__":
    main()
