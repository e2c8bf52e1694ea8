"""Fit which sentences to quote on the doc2dial training pack: the units real agents grounded
their replies on, and write quote.yaml in storage/kb/assets/decision/.

1. **Units** (``--extract``): for every question turn of the pack (``training/dialogue_pack``),
   the page that answers it read as one passage: each unit's window-reading focus and the
   cross-encoder's reading of the windows around the best-focused units
   (``tasks/quote_model.learned_by_unit``), as :class:`~tasks.decision_features.UnitFeatures`;
   a unit is labelled *evidence* when at least ``EVIDENCE_SHARE`` of its tokens are in the
   spans the agent's reply was grounded on. Kept in ``--units`` (JSON lines) to refit.
2. **Fit**: a logistic regression over the units' features, held out by grouped
   cross-validation (``SPLITS`` folds over ``training/dialogue_pack.clusters``: no page in
   two folds), ``C`` chosen by the held-out quotes' evidence recall.
3. **Measure** per held-out turn the quote of each method (the window reading alone, the
   cross-encoder alone, the fitted model), each through ``tasks.answerability.quote``: its
   token recall of the evidence and its precision (how much of the quote is evidence), with a
   bootstrap interval over page groups.

    python -m training.quote_fit --extract      # reads the pack (about 15 minutes on 2 cores)
    python -m training.quote_fit                # refits from /tmp/quote-units.jsonl

Writes bench/results/quote_fit.{md,json}; writes quote.yaml only when the held-out quote
model's evidence recall beats the window reading's (otherwise it removes a stale one, and the
product quotes by the window reading).
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

from config.settings import FITTED_QUOTE, QuoteModel, load_settings
from config.telemetry import apply_telemetry_policy
from evaluation.answers import answer_tokens
from evaluation.reporting import table, write_results
from storage.kb.ingest import ingest_paths
from storage.kb.knowledge_base import KnowledgeBase
from tasks.answerability import Focus, focus_in, quote
from tasks.decision_features import UnitFeatures
from tasks.evidence import EvidenceScorer
from tasks.passage_text import Unit
from tasks.quote_model import learned_by_unit, unit_features, unit_probabilities
from training.dialogue_pack import PACK, question_turns
from training.support_pairs import load_pages

SPLITS = 5
SEED = 13
EVIDENCE_SHARE = 0.6
C_VALUES = (0.1, 1.0, 10.0)
BOOTSTRAP = 1000
FEATURES = tuple(UnitFeatures.model_fields)


def recall_precision(quoted: str, evidence: str) -> tuple[float, float]:
    """Token recall of ``evidence`` in ``quoted`` and the share of ``quoted`` that is evidence.

    >>> recall_precision("Cards take 10 days.", "Cards take 10 days. PayPal takes 2.")
    (0.5, 1.0)
    """
    said, wanted = answer_tokens(quoted), answer_tokens(evidence)
    if not said or not wanted:
        return 0.0, 0.0
    have, pool = set(wanted), set(said)
    return (
        round(sum(t in pool for t in wanted) / len(wanted), 4),
        round(sum(t in have for t in said) / len(said), 4),
    )


def is_evidence(unit: str, evidence: set[str]) -> bool:
    tokens = answer_tokens(unit)
    return bool(tokens) and sum(t in evidence for t in tokens) / len(tokens) >= EVIDENCE_SHARE


def page_text(units: Sequence[Unit]) -> str:
    return "\n".join(f"## {u.text}" if u.kind == "heading" else u.text for u in units)


def extract(out: Path, data_dir: Path, limit: int) -> int:
    """Write one JSON line per pack question turn: its page's units, their features and labels."""
    settings = load_settings()
    kb = KnowledgeBase.open(settings, data_dir)
    ingest_paths(kb, [PACK / "kb"], prune=True)
    scorer = EvidenceScorer(kb.encoders, settings.evidence, kb.term_statistics)
    pages = {p.source_id: p for p in load_pages((PACK / "kb",))}
    written = 0
    with out.open("w", encoding="utf-8") as lines:
        for turn in question_turns():
            page = next((pages[g] for g in turn.gold if g in pages), None)
            found = focus_in(scorer, turn.text, page_text(page.units)) if page else None
            if page is None or found is None:
                continue
            focus = found.focus
            learned = learned_by_unit(scorer, turn.text, focus, page.title)
            wanted = set(answer_tokens(" ".join(turn.evidence)))
            record = {
                "key": turn.key,
                "group": turn.cluster,
                "question": turn.text,
                "evidence": " ".join(turn.evidence),
                "units": [{"text": u.text, "kind": u.kind} for u in focus.units],
                "reading": list(focus.focus),
                "learned": learned,
                "features": [f.model_dump() for f in unit_features(focus, learned, turn.text)],
                "labels": [is_evidence(u.text, wanted) for u in focus.units],
            }
            lines.write(json.dumps(record) + "\n")
            written += 1
            if limit and written >= limit:
                break
    kb.close()
    return written


def load(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


def matrix(turns: Sequence[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    x = [[f[n] for n in FEATURES] for t in turns for f in t["features"]]
    y = [label for t in turns for label in t["labels"]]
    return np.array(x, dtype=float), np.array(y, dtype=int)


def fit(turns: Sequence[dict[str, Any]], c: float) -> QuoteModel:
    x, y = matrix(turns)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-3] = 1.0
    regression = LogisticRegression(C=c, max_iter=2000).fit((x - mean) / scale, y)
    return QuoteModel(
        features=list(FEATURES),
        mean=[round(float(v), 5) for v in mean],
        scale=[round(float(v), 5) for v in scale],
        weights=[round(float(v), 5) for v in regression.coef_[0]],
        bias=round(float(regression.intercept_[0]), 5),
    )


def focus_of(turn: dict[str, Any], values: Sequence[float]) -> Focus:
    units = tuple(Unit(u["text"], u["kind"]) for u in turn["units"])
    return Focus(0, units, tuple(values))


Method = Callable[[dict[str, Any]], Sequence[float]]


def measured(turn: dict[str, Any], values: Sequence[float], words: int) -> tuple[float, float, int]:
    quoted = " ".join(quote(focus_of(turn, values), turn["question"], words))
    return (*recall_precision(quoted, turn["evidence"]), len(quoted.split()))


def held_out(turns: Sequence[dict[str, Any]], c: float) -> list[list[float]]:
    """Each turn's unit probabilities from the model fitted without its page group."""
    groups = [t["group"] for t in turns]
    probabilities: list[list[float]] = [[] for _ in turns]
    for train, test in GroupKFold(n_splits=SPLITS).split(turns, groups=groups):
        model = fit([turns[i] for i in train], c)
        for i in test:
            features = [UnitFeatures(**f) for f in turns[i]["features"]]
            probabilities[i] = unit_probabilities(model, features)
    return probabilities


def interval(values: Sequence[float], groups: Sequence[str]) -> str:
    """The mean with a 95 % bootstrap interval over page groups."""
    by_group: dict[str, list[float]] = {}
    for v, g in zip(values, groups, strict=True):
        by_group.setdefault(g, []).append(v)
    names = list(by_group)
    rng = random.Random(SEED)
    means = []
    for _ in range(BOOTSTRAP):
        sample = [v for g in rng.choices(names, k=len(names)) for v in by_group[g]]
        means.append(float(np.mean(sample)))
    low, high = np.percentile(means, [2.5, 97.5])
    return f"{np.mean(values):.3f} [{low:.3f}, {high:.3f}]"


def earns_its_place(figures: dict[str, dict[str, float]]) -> bool:
    """Whether the held-out quote model recalls more of the evidence than the window reading.

    >>> earns_its_place({"window reading": {"recall": 0.72}, "quote model (held out)": {"recall": 0.69}})
    False
    """
    return figures["quote model (held out)"]["recall"] > figures["window reading"]["recall"]


def main() -> None:
    apply_telemetry_policy()
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--extract", action="store_true", help="read the pack first")
    parser.add_argument("--units", type=Path, default=Path("/tmp/quote-units.jsonl"))
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/supportcrew-quote"))
    parser.add_argument("--limit", type=int, default=0, help="extract only the first N turns")
    parser.add_argument("--dry-run", action="store_true", help="measure, write no model")
    args = parser.parse_args()
    if args.extract:
        print(f"units: {extract(args.units, args.data_dir, args.limit)} turns", flush=True)
    turns = [t for t in load(args.units) if any(t["labels"])]
    words = load_settings().evidence.answer_words
    groups = [t["group"] for t in turns]
    recall_by_c = {}
    fitted_by_c = {}
    for c in C_VALUES:
        fitted_by_c[c] = held_out(turns, c)
        recall_by_c[c] = float(
            np.mean([measured(t, p, words)[0] for t, p in zip(turns, fitted_by_c[c], strict=True)])
        )
    best_c = max(C_VALUES, key=lambda c: recall_by_c[c])
    methods: dict[str, Sequence[Sequence[float]]] = {
        "window reading": [t["reading"] for t in turns],
        "cross-encoder": [t["learned"] for t in turns],
        "quote model (held out)": fitted_by_c[best_c],
    }
    rows, figures = [], {}
    for name, values in methods.items():
        scores = [measured(t, v, words) for t, v in zip(turns, values, strict=True)]
        recall, precision = [s[0] for s in scores], [s[1] for s in scores]
        figures[name] = {
            "recall": round(float(np.mean(recall)), 4),
            "precision": round(float(np.mean(precision)), 4),
            "recall_half": round(float(np.mean([r >= 0.5 for r in recall])), 4),
        }
        rows.append(
            (
                name,
                len(scores),
                interval(recall, groups),
                interval(precision, groups),
                figures[name]["recall_half"],
                float(np.median([s[2] for s in scores])),
            )
        )
    model = fit(turns, best_c)
    model = model.model_copy(
        update={
            "fitted_on": f"{len(turns)} doc2dial training-pack question turns "
            f"({sum(len(t['labels']) for t in turns)} units), C={best_c} "
            "(training/quote_fit.py)"
        }
    )
    shipped = earns_its_place(figures)
    if not args.dry_run and shipped:
        FITTED_QUOTE.write_text(
            "# Fitted by training/quote_fit.py; do not edit by hand.\n"
            + yaml.safe_dump(model.model_dump(), sort_keys=False)
        )
    elif not args.dry_run:
        FITTED_QUOTE.unlink(missing_ok=True)
    lines = [
        "# Which sentences to quote: the pack's held-out turns (training/quote_fit.py)",
        "",
        f"{len(turns)} question turns of the doc2dial training pack whose page holds their "
        f"evidence, the page read as one passage; the quote model held out by {SPLITS}-fold "
        f"cross-validation grouped by page (C={best_c}; held-out recall by C: "
        + ", ".join(f"{c}: {r:.3f}" for c, r in recall_by_c.items())
        + "). Evidence recall and precision: tokens of the spans the agent grounded the reply "
        "on, mean with a 95 % bootstrap interval over page groups.",
        "",
        *table(
            (
                "quote by",
                "turns",
                "evidence recall",
                "evidence precision",
                "recall >= 0.5",
                "words (median)",
            ),
            rows,
        ),
        "",
        "Weights (standardised): "
        + ", ".join(f"{n} {w:+.2f}" for n, w in zip(model.features, model.weights, strict=True)),
        "",
        "Shipped: "
        + (
            "the quote model (quote.yaml in storage/kb/assets/decision/)."
            if shipped
            else "none; the held-out quote model does not recall more of the evidence than the "
            "window reading, so the product quotes by the window reading."
        ),
        "",
    ]
    write_results("quote_fit", lines, {"figures": figures, "c": best_c, "recall_by_c": recall_by_c})
    print("\n".join(lines))


if __name__ == "__main__":
    main()
