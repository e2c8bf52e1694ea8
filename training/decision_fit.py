"""Fit the page choice and the gate on recorded turns, choose where the gate answers, and
write storage/kb/assets/decision/{page_choice,gate}.yaml.

Reads the rows of ``training/decision_rows.py``: the doc2dial training pack's question turns
in their conversations (the shipped cross-encoder never saw the pack), and the real questions
of the dev answer sets, each with its unanswerable twin; each row holds the readings the
product's decision made (``tasks/decision_features.py``). Everything here settles those
records with ``tasks.decision.settle``, the function the turn calls, so what is fitted is what
runs.

1. **Page choice** (``--refit-page-choice``; by default the shipped one is kept and measured):
   a logistic regression over each candidate's features (``FEATURES``), a candidate labelled
   right when its page answers the turn; rows of every phrasing of an answerable turn with a
   right candidate and another one. The pack's ``conversation`` feature marks the page of the
   dialogue's earlier gold turns, and pack dialogues rarely change page, so a refit leans on it
   (held out 0.996 on the pack) and keeps a follow-up that names another page on the old one.
2. **Gate**: with that page choice, each phrasing's chosen candidate gives the gate's features
   (``GateFeatures``), labelled right when the turn is answerable and the chosen page answers
   it (an answer from another page is as wrong as an answer to a twin); a logistic
   regression over each subset of ``SUBSETS``, the best by held-out log loss.
3. **Operating points**: every turn settled with the held-out models gives a probability and
   a page; ``answer_at`` is the lowest threshold from which every point of the pack's held-out
   risk-coverage curve reaches ``evidence.target_precision``, ``refuse_below`` the same for
   ``target_precision - UNDECIDED_DROP``. Where the curve never reaches the target (the
   cross-encoder limits it), ``answer_at`` is the threshold with the most right answers less
   ``WRONG_COST`` per wrong answer, ``refuse_below`` the same at a cost of one.

Held out means grouped cross-validation (``SPLITS`` folds): a pack turn is held out with every
turn about the same group of pages (``training/dialogue_pack.page_groups``), a dev question
with its twin. Figures carry a bootstrap interval over those groups.

    python -m training.decision_fit --rows /tmp/decision-rows.jsonl [--dry-run]

Writes bench/results/decision_fit.{md,json} and docs/images/risk-coverage-pack.png.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold

from config.settings import (
    FITTED_ANSWERABILITY,
    FITTED_PAGE_CHOICE,
    AnswerabilityModel,
    EvidenceSettings,
    OperatingPoint,
    PageChoiceModel,
    load_settings,
)
from evaluation.answers import plot_risk_coverage, risk_coverage
from evaluation.reporting import ROOT, table, write_results
from tasks.decision import settle
from tasks.decision_features import CandidateFeatures, GateFeatures, PhrasingReading
from tasks.operating_points import threshold_for
from tasks.page_choice import FEATURES
from training.dialogue_pack import page_groups

SPLITS = 5
SEED = 13
CURVE_POINTS = 101
UNDECIDED_DROP = 0.05
# a wrong answer costs a support team as much as this many hand-offs to a person (between
# refuse_below and answer_at the customer is still offered the page and a person)
WRONG_COST = 2.0
BOOTSTRAP = 1000
# the gate's feature subsets tried (the cross-encoder's reading in each). ``margin`` (how far
# the chosen page leads the next) is left out: on the pack it takes a negative weight (its
# programmes' sibling pages crowd an answerable turn, a twin's leftovers do not), which
# refuses the one clear page of a small help centre ("How long until my parcel ships?")
MARGIN_FREE = tuple(f for f in GateFeatures.model_fields if f != "margin")
SUBSETS: tuple[tuple[str, ...], ...] = (
    ("learned",),
    ("learned", "passage_relevance"),
    ("learned", "section_coverage", "passage_relevance"),
    ("learned", "section_coverage", "passage_relevance", "missing_rare"),
    (
        "learned",
        "section_coverage",
        "passage_relevance",
        "missing_rare",
        "code_explained",
        "code_unexplained",
    ),
    (
        "learned",
        "section_coverage",
        "window_similarity",
        "passage_relevance",
        "missing_rare",
        "code_explained",
        "code_unexplained",
    ),
    MARGIN_FREE,
)
PLOT = ROOT / "docs" / "images" / "risk-coverage-pack.png"
Row = dict[str, Any]


def load_rows(path: Path) -> list[Row]:
    """The recorded rows, each with its readings as records and its held-out group."""
    groups = page_groups()
    rows = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            row = json.loads(line)
            row["readings"] = [PhrasingReading.model_validate(r) for r in row["readings"]]
            row["held_with"] = (
                f"pack/{groups.get(row['group'], row['group'])}"
                if row["set"] == "pack"
                else row["group"]
            )
            rows.append(row)
    return rows


def _standardised_fit(x: np.ndarray, y: np.ndarray, c: float, balanced: bool) -> dict[str, Any]:
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-3] = 1.0  # a feature that never varies here: left unscaled
    regression = LogisticRegression(C=c, class_weight="balanced" if balanced else None, max_iter=2000)
    regression.fit((x - mean) / scale, y)
    return {
        "mean": [round(float(v), 5) for v in mean],
        "scale": [round(float(v), 5) for v in scale],
        "weights": [round(float(v), 5) for v in regression.coef_[0]],
        "bias": round(float(regression.intercept_[0]), 5),
    }


def choice_rows(rows: Sequence[Row]) -> list[tuple[str, list[CandidateFeatures], list[bool]]]:
    """(held-out group, candidates, right) of every phrasing with a right and a wrong candidate."""
    found = []
    for row in rows:
        if not row["answerable"]:
            continue
        for reading in row["readings"]:
            right = [c.page in row["gold"] for c in reading.candidates]
            if any(right) and not all(right):
                found.append((row["held_with"], [c.features for c in reading.candidates], right))
    return found


def fit_page_choice(rows: Sequence[Row], c: float = 1.0) -> PageChoiceModel:
    examples = choice_rows(rows)
    x = np.array([[getattr(f, n) for n in FEATURES] for _, fs, _ in examples for f in fs])
    y = np.array([r for _, _, rs in examples for r in rs])
    fitted = _standardised_fit(x, y, c, balanced=False)
    del fitted["bias"]  # only the order of the candidates of one phrasing matters
    return PageChoiceModel(features=list(FEATURES), **fitted)


def with_models(
    evidence: EvidenceSettings, choice: PageChoiceModel | None, gate: AnswerabilityModel | None
) -> EvidenceSettings:
    update: dict[str, Any] = {}
    if choice is not None:
        update["page_choice"] = choice
    if gate is not None:
        update["answerability"] = gate
    return evidence.model_copy(update=update)


def gate_rows(rows: Sequence[Row], evidence: EvidenceSettings) -> list[tuple[str, GateFeatures, bool]]:
    """(held-out group, the gate's features, answers right) of every phrasing of every row,
    the candidate chosen by ``evidence``'s page choice."""
    found = []
    for row in rows:
        for reading in row["readings"]:
            decision = settle([reading], evidence)
            right = row["answerable"] and decision.source_id in row["gold"]
            found.append((row["held_with"], decision.features, right))
    return found


def fit_gate(
    examples: Sequence[tuple[str, GateFeatures, bool]], features: Sequence[str], c: float
) -> AnswerabilityModel:
    x = np.array([[getattr(f, n) for n in features] for _, f, _ in examples])
    y = np.array([r for _, _, r in examples])
    return AnswerabilityModel(features=list(features), **_standardised_fit(x, y, c, balanced=True))


def held_out(rows: Sequence[Row], fit: Callable[[Sequence[Row]], Any]) -> list[tuple[list[int], Any]]:
    """(held-out row indices, the model fitted on the other rows) per grouped split."""
    groups = [r["held_with"] for r in rows]
    splits = GroupKFold(n_splits=SPLITS).split(np.zeros(len(rows)), groups=groups)
    return [(list(test), fit([rows[i] for i in train])) for train, test in splits]


def choice_accuracy(rows: Sequence[Row], evidence: EvidenceSettings) -> float:
    """Over the phrasings with a right and a wrong candidate: the chosen page is right."""
    examples = [
        (row, reading)
        for row in rows
        if row["answerable"]
        for reading in row["readings"]
        if any(c.page in row["gold"] for c in reading.candidates)
        and not all(c.page in row["gold"] for c in reading.candidates)
    ]
    if not examples:
        return 0.0
    right = [settle([reading], evidence).source_id in row["gold"] for row, reading in examples]
    return round(float(np.mean(right)), 4)


def settled(row: Row, evidence: EvidenceSettings) -> Row:
    """The row as the product decides it with ``evidence``'s models (a risk-coverage row)."""
    decision = settle(row["readings"], evidence, row["subject"])
    return {
        "answerable": row["answerable"],
        "probability": decision.probability,
        "gate_source": decision.source_id,
        "gate_right": row["answerable"] and decision.source_id in row["gold"],
        "held_with": row["held_with"],
        "set": row["set"],
        "twin": row["twin"],
    }


def rates(decided: Sequence[Row], answer_at: float) -> dict[str, float]:
    """Answered right (answerable), refused (unanswerable), precision, wrong answers."""
    answerable = [r for r in decided if r["answerable"]]
    refusable = [r for r in decided if not r["answerable"]]
    answered = [r for r in decided if r["gate_source"] and r["probability"] >= answer_at]
    right = [r for r in answered if r["gate_right"]]
    return {
        "answered_right": len(right) / len(answerable) if answerable else 0.0,
        "refused": sum(r["probability"] < answer_at for r in refusable) / len(refusable)
        if refusable
        else 0.0,
        "precision": len(right) / len(answered) if answered else 1.0,
        "wrong_answers": float(len(answered) - len(right)),
    }


def with_interval(decided: Sequence[Row], answer_at: float) -> dict[str, str]:
    """Each rate with its 95 % bootstrap interval, resampling the held-out groups."""
    by_group: dict[str, list[Row]] = {}
    for row in decided:
        by_group.setdefault(row["held_with"], []).append(row)
    names = list(by_group)
    rng = random.Random(SEED)
    samples: dict[str, list[float]] = {}
    for _ in range(BOOTSTRAP):
        drawn = [r for _ in names for r in by_group[rng.choice(names)]]
        for key, value in rates(drawn, answer_at).items():
            samples.setdefault(key, []).append(value)
    point = rates(decided, answer_at)
    return {
        key: (
            f"{point[key]:.0f}"
            if key == "wrong_answers"
            else f"{point[key]:.3f} [{np.percentile(samples[key], 2.5):.3f}, "
            f"{np.percentile(samples[key], 97.5):.3f}]"
        )
        for key in point
    }


def curve_threshold(curve: Sequence[dict[str, float]], precision: float) -> float:
    points = [OperatingPoint(**{k: p[k] for k in ("threshold", "precision", "coverage")}) for p in curve]
    return threshold_for(points, precision)


def cheapest_threshold(decided: Sequence[Row], wrong_cost: float) -> float:
    """The threshold with the most right answers less ``wrong_cost`` per wrong answer."""
    thresholds = [round(i / (CURVE_POINTS - 1), 4) for i in range(CURVE_POINTS)]

    def value(threshold: float) -> float:
        answered = [r for r in decided if r["gate_source"] and r["probability"] >= threshold]
        right = sum(r["gate_right"] for r in answered)
        return right - wrong_cost * (len(answered) - right)

    return max(thresholds, key=lambda t: (value(t), t))


def net_right(decided: Sequence[Row], answer_at: float, wrong_cost: float = WRONG_COST) -> float:
    """Right answers less ``wrong_cost`` per wrong answer at ``answer_at``."""
    answered = [r for r in decided if r["gate_source"] and r["probability"] >= answer_at]
    right = sum(r["gate_right"] for r in answered)
    return right - wrong_cost * (len(answered) - right)


def operating_point(
    decided: Sequence[Row], curve: Sequence[dict[str, float]], target: float
) -> tuple[float, float, str]:
    """(answer_at, refuse_below, how they were chosen) from the pack's held-out rows."""
    answer_at = curve_threshold(curve, target)
    if answer_at < 1.0:
        lower = curve_threshold(curve, target - UNDECIDED_DROP)
        return (
            answer_at,
            min(answer_at, lower),
            f"the held-out curve reaches {target} / {target - UNDECIDED_DROP:.2f}",
        )
    answer_at = cheapest_threshold(decided, WRONG_COST)
    refuse_below = min(answer_at, cheapest_threshold(decided, 1.0))
    how = (
        f"the held-out curve never reaches precision {target}; answer_at: most right answers less "
        f"{WRONG_COST:g} per wrong answer, refuse_below: less 1 per wrong answer"
    )
    return answer_at, refuse_below, how


Splits = list[tuple[list[int], PageChoiceModel]]


def page_choice_table(rows: Sequence[Row], evidence: EvidenceSettings, choices: Splits) -> list[tuple]:
    """The held-out page choice beside the shipped one and single features, pack and dev."""
    table_rows: list[tuple] = []
    singles = {
        "reading alone": "reading",
        "cross-encoder alone": "learned",
        "relevance alone": "relevance",
    }
    models: dict[str, PageChoiceModel | None] = {
        "fitted (held out)": None,
        "shipped before": evidence.page_choice,
        **{
            name: PageChoiceModel(features=[f], mean=[0.0], scale=[1.0], weights=[1.0])
            for name, f in singles.items()
        },
    }
    for name, model in models.items():
        figures: list[float] = []
        for in_pack in (True, False):
            part = {i for i, r in enumerate(rows) if (r["set"] == "pack") == in_pack}
            if model is None:
                weighted = []
                for test, fitted in choices:
                    chosen = [rows[i] for i in sorted(set(test) & part)]
                    accuracy = choice_accuracy(chosen, with_models(evidence, fitted, None))
                    weighted.append((accuracy, len(chosen)))
                total = sum(n for _, n in weighted) or 1
                figures.append(round(sum(a * n for a, n in weighted) / total, 4))
            else:
                chosen = [rows[i] for i in sorted(part)]
                figures.append(choice_accuracy(chosen, with_models(evidence, model, None)))
        table_rows.append((name, *figures))
    return table_rows


def split_gate(
    rows: Sequence[Row],
    evidence: EvidenceSettings,
    test: Sequence[int],
    chooser: PageChoiceModel,
    features: Sequence[str],
    c: float,
) -> tuple[EvidenceSettings, list[tuple[str, GateFeatures, bool]]]:
    """The gate fitted without the ``test`` rows (with that split's page choice), as
    settings that never answer below 0.5, and the ``test`` rows' gate examples."""
    held = set(test)
    chosen = with_models(evidence, chooser, None)
    gate = fit_gate(gate_rows([r for i, r in enumerate(rows) if i not in held], chosen), features, c)
    gate = gate.model_copy(update={"answer_at": 0.5, "refuse_below": 0.5})
    return with_models(evidence, chooser, gate), gate_rows([rows[i] for i in test], chosen)


def log_loss(model: AnswerabilityModel, examples: Sequence[tuple[str, GateFeatures, bool]]) -> float:
    """The summed log loss of ``model``'s probabilities on the examples."""
    x = np.array([[getattr(f, n) for n in model.features] for _, f, _ in examples])
    z = model.bias + ((x - np.array(model.mean)) / np.array(model.scale)) @ np.array(model.weights)
    p = np.clip(1 / (1 + np.exp(-z)), 1e-6, 1 - 1e-6)
    y = np.array([r for _, _, r in examples])
    return float(-np.sum(y * np.log(p) + (1 - y) * np.log(1 - p)))


def gate_subsets(
    rows: Sequence[Row], evidence: EvidenceSettings, choices: Splits, c: float
) -> list[dict[str, Any]]:
    """Each subset of ``SUBSETS`` with its held-out log loss per example, best first."""
    ranked = []
    for features in SUBSETS:
        total, count = 0.0, 0
        for test, chooser in choices:
            held, examples = split_gate(rows, evidence, test, chooser, features, c)
            total += log_loss(held.answerability, examples)
            count += len(examples)
        ranked.append({"features": list(features), "log_loss": round(total / max(count, 1), 4)})
    return sorted(ranked, key=lambda s: (s["log_loss"], len(s["features"])))


def held_out_decisions(
    rows: Sequence[Row], evidence: EvidenceSettings, choices: Splits, features: Sequence[str], c: float
) -> list[Row]:
    """Every row settled by the models of the split that held it out."""
    decided: dict[int, Row] = {}
    for test, chooser in choices:
        held, _ = split_gate(rows, evidence, test, chooser, features, c)
        decided.update({i: settled(rows[i], held) for i in test})
    return [decided[i] for i in range(len(rows))]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=Path, default=Path("/tmp/decision-rows.jsonl"))
    parser.add_argument("--c", type=float, default=1.0, help="inverse regularisation strength")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--write-gate", action="store_true", help="ship the refitted gate")
    parser.add_argument(
        "--refit-page-choice",
        action="store_true",
        help="refit the page choice too (the pack's conversation feature names the dialogue's "
        "gold page, so a refit leans on it and stays on a page a follow-up leaves)",
    )
    args = parser.parse_args()
    evidence = load_settings().evidence
    target = evidence.target_precision
    rows = load_rows(args.rows)
    pack = [r for r in rows if r["set"] == "pack"]
    if args.refit_page_choice:
        choices: Splits = held_out(rows, lambda train: fit_page_choice(train, args.c))
    else:
        choices = held_out(rows, lambda train: evidence.page_choice)
    choice_table = page_choice_table(rows, evidence, choices)
    subsets = gate_subsets(rows, evidence, choices, args.c)
    best = subsets[0]["features"]
    decided = held_out_decisions(rows, evidence, choices, best, args.c)
    in_pack = [r for r in decided if r["set"] == "pack"]
    first = [d for d, r in zip(decided, rows, strict=True) if d["set"] == "pack" and r["first"]]
    curves = {
        "pack, held-out folds": risk_coverage(in_pack, CURVE_POINTS),
        "pack, first turns": risk_coverage(first, CURVE_POINTS),
        "dev answer sets": risk_coverage([r for r in decided if r["set"] != "pack"], CURVE_POINTS),
    }
    answer_at, refuse_below, how = operating_point(in_pack, curves["pack, held-out folds"], target)
    before = [settled(r, evidence) for r in rows]
    before_at = evidence.answerability.answer_at

    # the shipped models: fitted on every row
    about = (
        f"{len(rows)} recorded turns ({len(pack)} of the doc2dial training pack, read by the shipped "
        f"cross-encoder, which never saw the pack, with twins; {len(rows) - len(pack)} of the dev "
        "answer sets, with twins); training/decision_fit.py"
    )
    chooser = (
        fit_page_choice(rows, args.c).model_copy(update={"fitted_on": about})
        if args.refit_page_choice
        else evidence.page_choice
    )
    gate = fit_gate(gate_rows(rows, with_models(evidence, chooser, None)), best, args.c)
    gate = gate.model_copy(
        update={
            "answer_at": answer_at,
            "refuse_below": refuse_below,
            "fitted_on": about + "; answer_at / refuse_below: " + how,
        }
    )
    figures = {
        "pack, held-out folds": with_interval(in_pack, answer_at),
        "pack, first turns": with_interval(first, answer_at),
        "dev answer sets": with_interval([r for r in decided if r["set"] != "pack"], answer_at),
        f"pack, the models shipped before (answer_at {before_at})": with_interval(
            [r for r in before if r["set"] == "pack"], before_at
        ),
    }
    lines = report_lines(about, choice_table, subsets, answer_at, refuse_below, how, figures, curves)
    results = {
        "page_choice": chooser.model_dump(),
        "gate": gate.model_dump(),
        "choice_table": choice_table,
        "subsets": subsets,
        "figures": figures,
        "curves": curves,
    }
    before_pack = [r for r in before if r["set"] == "pack"]
    lines.append(
        f"Right answers less {WRONG_COST:g} per wrong answer on the pack: the refit (held out) "
        f"{net_right(in_pack, answer_at):.0f}, the shipped gate "
        f"{net_right(before_pack, before_at):.0f}. "
        + (
            "Written to gate.yaml (--write-gate)."
            if args.write_gate
            else "gate.yaml is written only with --write-gate: a refit is shipped after the "
            "product's own tests and answer sets read it too (docs/answering.md)."
        )
    )
    write_results("decision_fit", lines, results)
    if args.dry_run:
        return
    plot_risk_coverage(curves, PLOT, dict.fromkeys(curves, answer_at), "held-out risk-coverage")
    header = "# Fitted by training/decision_fit.py; do not edit by hand.\n"
    chosen_fields = ("features", "mean", "scale", "weights", "fitted_on")
    if args.refit_page_choice:
        FITTED_PAGE_CHOICE.write_text(
            header
            + yaml.safe_dump(
                {k: chooser.model_dump()[k] for k in chosen_fields}, sort_keys=False, width=100
            )
        )
    if args.write_gate:
        FITTED_ANSWERABILITY.write_text(
            header + yaml.safe_dump(gate.model_dump(), sort_keys=False, width=100)
        )


def report_lines(
    about: str,
    choice_table: list[tuple],
    subsets: list[dict[str, Any]],
    answer_at: float,
    refuse_below: float,
    how: str,
    figures: dict[str, dict[str, str]],
    curves: dict[str, list[dict[str, float]]],
) -> list[str]:
    """The Markdown report."""
    first_curve = next(iter(curves.values()))
    return [
        "# The answer decision fitted on recorded turns (training/decision_fit.py)",
        "",
        about + ".",
        "",
        "## Page choice (held out; the phrasings with a right and a wrong candidate)",
        "",
        *table(("chooser", "pack", "dev answer sets"), choice_table),
        "",
        "## Gate feature subsets (held-out log loss)",
        "",
        *table(("features", "log loss"), ((", ".join(s["features"]), s["log_loss"]) for s in subsets)),
        "",
        f"Chosen: {', '.join(subsets[0]['features'])}. answer_at {answer_at}, refuse_below "
        f"{refuse_below} ({how}).",
        "",
        "## Held-out figures at answer_at (95 % bootstrap interval over page groups)",
        "",
        *table(
            ("set", "answered right", "unanswerable refused", "precision", "wrong answers"),
            (
                (name, f["answered_right"], f["refused"], f["precision"], f["wrong_answers"])
                for name, f in figures.items()
            ),
        ),
        "",
        "## Risk-coverage (held out): precision / coverage per threshold",
        "",
        *table(
            ("threshold", *curves),
            (
                (p["threshold"], *(f"{c[i]['precision']} / {c[i]['coverage']}" for c in curves.values()))
                for i, p in enumerate(first_curve)
                if i % 5 == 0
            ),
        ),
        "",
    ]


if __name__ == "__main__":
    main()
