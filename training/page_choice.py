"""Fit the page choice (``tasks/page_choice.py``) on dev data and write it beside the models
it reads (storage/kb/assets/decision/page_choice.yaml).

Rows: every candidate passage of every answerable dev turn, labelled by whether its page
answers (the turn's gold page):

* first turns: the real questions of ``../shared/datasets/doc2dial-support-dev`` and of
  ``examples/answer-sets`` (near-miss, support-problems, support-requests), each searched and
  read as the product's gate reads them (``tasks.decision.choose_page``);
* conversation turns: every turn of ``examples/kickoff`` (conversations, follow-ups and the
  dev dialogues over examples/kb and over the doc2dial dev pages) that expects an answer,
  through the product's turn (their candidates as the gate's trace records them), so
  follow-ups are read in their conversation with the page it is about as a candidate.

A logistic regression over the candidates' standardised features (``FEATURES``) scores each
candidate; the best-scoring one is chosen. Page-choice accuracy (right page first, among the
turns whose right page is a candidate) is reported by 5-fold cross-validation grouped by
question, beside the window reading that chose before and the cross-encoder alone.

    python -m training.page_choice [--data-dir DIR] [--dry-run]

Writes storage/kb/assets/decision/page_choice.yaml (unless --dry-run) and
bench/results/page_choice.{md,json}.
"""

from __future__ import annotations

import argparse
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold

from config.settings import FITTED_PAGE_CHOICE, PageChoiceModel, Settings, load_settings
from config.telemetry import apply_telemetry_policy
from evaluation.dev_runs import open_answer_set, run_scripts
from evaluation.reporting import DATASETS, ROOT, table, write_results
from tasks.answerability import RANK_WEIGHT
from tasks.decision import choose_page
from tasks.page_choice import FEATURES

DEV = DATASETS / "doc2dial-support-dev"
SETS = [
    DEV,
    *(
        ROOT / "examples" / "answer-sets" / n
        for n in ("near-miss", "support-problems", "support-requests")
    ),
]
SCRIPTS = [
    "conversations.yaml",
    "follow-ups.yaml",
    "kb-dev-conversations.yaml",
    "doc2dial-dev-conversations.yaml",
]
SEED = 13
C = 1.0


def first_turn_groups(data_dir: Path, settings: Settings) -> list[dict]:
    """One group per answerable real question: its candidates' features and labels."""
    groups = []
    unfitted = settings.evidence.model_copy(update={"page_choice": PageChoiceModel()})
    for directory in SETS:
        opened = open_answer_set(directory, data_dir / directory.name)
        for question in opened.answer_set.questions:
            if not question.answerable:
                continue
            passages = opened.search(question.question)
            if not passages:
                continue
            relevance = opened.scorer.relevance(question.question, [p.text for p in passages])
            reading = choose_page(opened.scorer, question.question, passages, relevance, unfitted)
            groups.append(
                {
                    "set": opened.answer_set.name,
                    "id": f"{opened.answer_set.name}/{question.id}",
                    "rows": [
                        {**r, "gold": passages[int(r["passage"])].source_id in question.doc_ids}
                        for r in reading.candidates
                    ],
                }
            )
        opened.close()
    return groups


def conversation_groups(data_dir: Path, settings: Settings) -> list[dict]:
    """One group per conversation turn that expects an answer, from the gate's trace."""
    unfitted = settings.model_copy(
        update={"evidence": settings.evidence.model_copy(update={"page_choice": PageChoiceModel()})}
    )
    groups = []
    for turn in run_scripts("crewai", SCRIPTS, data_dir / "conversations", unfitted):
        if turn["want"] != "answered" or not turn["candidates"]:
            continue
        groups.append(
            {
                "set": turn["set"],
                "id": f"{turn['set']}/{turn['conversation']}/{turn['turn']}",
                "rows": [{**c, "gold": c["page"] in turn["cites"]} for c in turn["candidates"]],
            }
        )
    return groups


def matrix(groups: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x, y, g = [], [], []
    for number, group in enumerate(groups):
        for row in group["rows"]:
            x.append([float(row.get(f, 0.0)) for f in FEATURES])
            y.append(bool(row["gold"]))
            g.append(number)
    return np.array(x), np.array(y), np.array(g)


def fit(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=C, max_iter=2000, class_weight="balanced")
    model.fit((x - mean) / scale, y)
    return mean, scale, model.coef_[0]


def chosen_right(groups: list[dict], scores: list[list[float]]) -> list[bool]:
    """Per group, whether its best-scoring candidate is a gold one."""
    return [bool(g["rows"][int(np.argmax(s))]["gold"]) for g, s in zip(groups, scores, strict=True)]


def main() -> None:
    apply_telemetry_policy()  # where the training process starts
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/supportcrew-fit-page-choice"))
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    shutil.rmtree(args.data_dir, ignore_errors=True)
    settings = load_settings()
    groups = first_turn_groups(args.data_dir, settings) + conversation_groups(args.data_dir, settings)
    reachable = [g for g in groups if any(r["gold"] for r in g["rows"])]
    x, y, owner = matrix(reachable)
    cross = [[0.0] * len(g["rows"]) for g in reachable]
    folds = GroupKFold(n_splits=5)
    for train, held in folds.split(x, y, owner):
        mean, scale, weights = fit(x[train], y[train])
        held_scores = ((x[held] - mean) / scale) @ weights
        for row_index, value in zip(held, held_scores, strict=True):
            group = owner[row_index]
            position = int(row_index - np.flatnonzero(owner == group)[0])
            cross[group][position] = float(value)
    systems = {
        "window reading (before)": [
            [r["reading"] + RANK_WEIGHT * r["relevance"] for r in g["rows"]] for g in reachable
        ],
        "cross-encoder alone": [[r.get("learned", 0.0) for r in g["rows"]] for g in reachable],
        "retrieval rank alone": [[r.get("rank", 0.0) for r in g["rows"]] for g in reachable],
        "gate relevance alone": [[r["relevance"] for r in g["rows"]] for g in reachable],
        "fitted choice (5-fold, held out)": cross,
    }
    by_set: dict[str, list[int]] = defaultdict(list)
    for number, group in enumerate(reachable):
        by_set[group["set"]].append(number)
    rows, data = [], {}
    for name, scores in systems.items():
        right = chosen_right(reachable, scores)
        per_set = {s: f"{sum(right[i] for i in ids)}/{len(ids)}" for s, ids in by_set.items()}
        data[name] = {"all": round(sum(right) / len(right), 3), **per_set}
        rows.append((name, f"{sum(right)}/{len(right)}", *per_set.values()))
    mean, scale, weights = fit(x, y)
    fitted: dict[str, Any] = {
        "features": list(FEATURES),
        "mean": [round(float(v), 5) for v in mean],
        "scale": [round(float(v), 5) for v in scale],
        "weights": [round(float(v), 5) for v in weights],
        "fitted_on": (
            f"{len(reachable)} dev turns ({len(x)} candidates; first turns of doc2dial dev and "
            "examples/answer-sets, every answerable turn of examples/kickoff conversations); "
            "training/page_choice.py"
        ),
    }
    lines = [
        "# Page choice: the candidate that answers, right page first",
        "",
        f"{len(groups)} answerable dev turns, {len(reachable)} with the right page among the "
        f"candidates ({len(groups) - len(reachable)} without: retrieval missed it). Fitted on "
        "dev only; the test pack is never read here.",
        "",
        *table(("chooser", "all", *by_set.keys()), rows),
        "",
        "Weights (standardised features): "
        + ", ".join(f"{f} {w:+.2f}" for f, w in zip(FEATURES, fitted["weights"], strict=True)),
    ]
    write_results("page_choice", lines, {"accuracy": data, "model": fitted})
    if not args.dry_run:
        PageChoiceModel.model_validate(fitted)
        FITTED_PAGE_CHOICE.write_text(
            "# Fitted by training/page_choice.py; do not edit by hand.\n"
            + yaml.safe_dump(fitted, sort_keys=False)
        )
        print(f"wrote {FITTED_PAGE_CHOICE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
