"""Fit the answerability gate on data we may tune on, and write config/answerability.yaml.

Training questions (never the doc2dial *test* pack):

* ``../shared/datasets/doc2dial-support-dev`` (20 answerable, 11 unanswerable real questions);
* ``examples/answer-sets/near-miss`` (questions over examples/kb written for supportcrew);
* for every answerable question, the same question with its answering documents taken out of
  the results (the way doc2dial's unanswerable questions were made: gold page removed).

Features come from the product path: the turn's search under the set's slots, then
``tasks.answerability.read``. A scikit-learn logistic regression on standardised features is
scored by leave-one-question-out cross-validation (a question and its gold-removed twin are
held out together); the operating point maximises balanced accuracy of those held-out
probabilities on the real questions (the middle of the gap between the classes).

    python bench/fit_logistic_gate.py [--data-dir DIR] [--features a,b,...] [--dry-run]

Writes config/answerability.yaml (unless --dry-run) and bench/results/answerability.{md,json}.
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np
import yaml
from _common import ROOT, open_answer_set, table, write_results
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import LeaveOneGroupOut

from tasks.answerability import FEATURES, read

DEV = ROOT.parent / "shared" / "datasets" / "doc2dial-support-dev"
SETS = [DEV, ROOT / "examples" / "answer-sets" / "near-miss"]
AUGMENT_DEPTH = 10


def features_of(opened: object, question: str, passages: list, with_learned: bool) -> dict[str, float]:
    """The logistic gate's features of the passages; with ``with_learned``, also the learned
    model's best window probability (``learned``), to see whether it adds to them."""
    texts = [p.text for p in passages]
    features = dict(read(opened.scorer, question, texts).features)
    if with_learned:
        from tasks.learned_answerability import read as learned_read

        features["learned"] = learned_read(opened.scorer, question, texts, quoting=False).features[
            "answerable"
        ]
    return features


def rows_for(directory: Path, data_dir: Path, with_learned: bool = False) -> list[dict]:
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
                **features_of(opened, question.question, found, with_learned),
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
                    **features_of(opened, question.question, kept, with_learned),
                }
            )
    opened.close()
    return rows


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
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/supportcrew-answerability"))
    parser.add_argument("--features", default="", help="comma-separated; default: searched")
    parser.add_argument("--c", type=float, default=1.0, help="inverse regularisation strength")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument(
        "--with-learned",
        action="store_true",
        help="also offer the learned model's probability as a feature "
        "(an experiment: the product's logistic gate does not compute it)",
    )
    args = parser.parse_args()
    rows = [
        row
        for directory in SETS
        if directory.exists()
        for row in rows_for(directory, args.data_dir / directory.name, args.with_learned)
    ]
    candidates = (*FEATURES, "learned") if args.with_learned else FEATURES
    subsets = (
        [args.features.split(",")]
        if args.features
        else [list(s) for n in (2, 3, 4) for s in itertools.combinations(candidates, n)]
    )
    if args.with_learned and not args.dry_run:
        parser.error("--with-learned is an experiment: add --dry-run")
    ranking = []
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
        "fitted_on": f"{len(rows)} rows: "
        + ", ".join(p.name for p in SETS if p.exists())
        + " (+ gold-removed twins); bench/fit_logistic_gate.py",
    }
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
    ]
    write_results("answerability", lines, {"model": fitted, "table": ranking, "rows": rows})
    if not args.dry_run:
        header = "# Fitted by bench/fit_logistic_gate.py; do not edit by hand.\n"
        (ROOT / "config" / "answerability.yaml").write_text(
            header + yaml.safe_dump(fitted, sort_keys=False, width=100)
        )


if __name__ == "__main__":
    main()
