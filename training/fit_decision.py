"""One reproducible fit of every shipped decision asset: the page choice and the gate (and
the quote choice where it wins), from real turns, chosen on held-out folds.

    python -m training.fit_decision                 # fit and report; writes nothing shipped
    python -m training.fit_decision --write         # ... and writes the assets and their card
    python -m training.fit_decision --limit 40      # a small fit (the test checks its card)

1. **Data** (``training/decision_readings.fitting_asks``): the doc2dial training pack's
   question turns in their conversations and their clean unanswerable twins, and the written
   answer sets over examples/kb; no issue-quoted message. Five folds: the pack's by page
   cluster (``training/dialogue_pack.folds``), a written question's by its name.
2. **Readings**: each ask is a real turn of the product (``record``), its decision's inputs
   kept by content hash; the features (``tasks.decision.read_message``, the one featurizer
   serving uses) are kept by the featurizer's digest (the tasks/ sources, the rule set and
   the cross-encoder), so a refit after a feature change re-reads features only, and a refit
   of the models alone reads nothing.
3. **Page choice**: a logistic regression over each candidate's features
   (``PAGE_FEATURES``), a candidate right when its page answers; ``C`` by held-out accuracy.
4. **Gate**: with the fold's page choice, each phrasing's chosen candidate gives the gate's
   features (``GateFeatures``), right when the turn is answerable and the page answers it; a
   logistic regression over ``GATE_FEATURES``, ``C`` by held-out log loss.
5. **Operating points**: every row settled with its fold's models (``tasks.decision.settle``,
   what the turn calls) gives a held-out probability and page; ``answer_at`` is the lowest
   threshold from which the pack's held-out curve keeps ``evidence.target_precision``
   (``training/decision_metrics.operating_point``).

Figures (bench/results/fit_decision.{md,json}, docs/images/risk-coverage-folds.png) carry a
95 % bootstrap interval over held-out groups; openers, later turns and the written sets are
reported apart. ``--write`` writes page_choice.yaml, gate.yaml and fit_card.json (inputs'
hashes, folds, figures, the rule-set version) in storage/kb/assets/decision/.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from sklearn.linear_model import LogisticRegression

from config.settings import (
    FITTED_ANSWERABILITY,
    FITTED_DECISION,
    FITTED_PAGE_CHOICE,
    AnswerabilityModel,
    EvidenceSettings,
    PageChoiceModel,
    Settings,
    load_settings,
)
from config.telemetry import apply_telemetry_policy
from evaluation.answers import plot_risk_coverage
from evaluation.reporting import ROOT, table, write_results
from storage.kb.knowledge_base import KnowledgeBase
from tasks.decision import read_message, settle, settle_phrasing
from tasks.decision_features import CandidateFeatures, GateFeatures, PhrasingReading
from tasks.evidence import EvidenceScorer
from tasks.page_choice import FEATURES
from tasks.rules import RULES_VERSION
from training.decision_metrics import (
    Decided,
    net_right,
    operating_point,
    risk_coverage,
    with_interval,
)
from training.decision_readings import (
    ISSUE_CASES,
    WRITTEN,
    Ask,
    Recorded,
    fitting_asks,
    kb_digest,
    keep_readings,
    model_digest,
    record,
)
from training.dialogue_pack import FOLDS, PACK, SEED

CACHE = ROOT / ".supportcrew" / "fit-cache"
CARD = FITTED_DECISION / "fit_card.json"
PLOT = ROOT / "docs" / "images" / "risk-coverage-folds.png"
PAGE_FEATURES = FEATURES
GATE_FEATURES = tuple(GateFeatures.model_fields)
C_VALUES = (0.03, 0.1, 0.3, 1.0, 3.0)
FEATURIZER = ("tasks",)  # the sources whose change means reading the features again
Row = dict[str, Any]


def first_of_each_set(asks: Sequence[Ask], limit: int) -> list[Ask]:
    """The first ``limit`` asks of each set (a small fit)."""
    taken: dict[str, int] = {}
    kept = []
    for ask in asks:
        if taken.get(ask.set, 0) < limit:
            taken[ask.set] = taken.get(ask.set, 0) + 1
            kept.append(ask)
    return kept


def featurizer_digest(settings: Settings) -> str:
    """What the features depend on: the tasks/ sources, the rule set and the cross-encoder."""
    digest = hashlib.sha256(RULES_VERSION.encode() + model_digest(settings).encode())
    for folder in FEATURIZER:
        for path in sorted((ROOT / folder).rglob("*.py")):
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _row(ask: Ask, recorded: Recorded, readings: Sequence[PhrasingReading]) -> Row:
    return {
        "digest": recorded.digest,
        "set": ask.set,
        "key": ask.key,
        "twin": ask.twin,
        "switch": ask.switch,
        "answerable": ask.answerable,
        "gold": list(ask.gold),
        "fold": ask.fold,
        "group": ask.group,
        "opener": ask.opener,
        "test_like": ask.test_like,
        "subject": recorded.subject,
        "readings": [r.model_dump() for r in readings],
    }


def featurized(
    asks: Sequence[Ask],
    recorded: dict[str, Recorded],
    settings: Settings,
    cache: Path,
    progress: Callable[[str], None] = print,
) -> list[Row]:
    """Each ask's readings by the product's featurizer, read again only where the cache (by
    the featurizer's digest) does not hold them."""
    path = cache / f"features-{featurizer_digest(settings)}.jsonl"
    kept: dict[str, list[dict]] = {}
    if path.exists():
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                one = json.loads(line)
                kept[one["digest"]] = one["readings"]
    for folder in dict.fromkeys(a.kb for a in asks):
        missing = {a.digest() for a in asks if a.kb == folder and a.digest() not in kept}
        if not missing:
            continue
        kb = KnowledgeBase.open(settings, cache / f"kb-{kb_digest(folder, settings)}")
        scorer = EvidenceScorer(kb.encoders, settings.evidence, kb.term_statistics)
        keep_readings(scorer, cache, settings)
        try:
            with path.open("a", encoding="utf-8") as out:
                for done, digest in enumerate(sorted(missing), start=1):
                    one = recorded[digest]
                    readings, _ = read_message(
                        scorer, settings, one.message, one.conversation, one.passages
                    )
                    kept[digest] = [r.model_dump() for r in readings]
                    out.write(json.dumps({"digest": digest, "readings": kept[digest]}) + "\n")
                    if done % 200 == 0:
                        progress(f"{folder.name}: {done} of {len(missing)} turns read")
        finally:
            kb.close()
    return [
        {
            **_row(a, recorded[a.digest()], []),
            "readings": [PhrasingReading.model_validate(r) for r in kept[a.digest()]],
        }
        for a in asks
    ]


def _standardised(x: np.ndarray, y: np.ndarray, c: float) -> dict[str, Any]:
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-3] = 1.0  # a feature that never varies here: left unscaled
    regression = LogisticRegression(C=c, max_iter=5000).fit((x - mean) / scale, y)
    return {
        "mean": [round(float(v), 5) for v in mean],
        "scale": [round(float(v), 5) for v in scale],
        "weights": [round(float(v), 5) for v in regression.coef_[0]],
        "bias": round(float(regression.intercept_[0]), 5),
    }


def choice_examples(rows: Sequence[Row]) -> list[tuple[list[CandidateFeatures], list[bool]]]:
    """(candidates, right) of every phrasing of an answerable row with a right and a wrong
    candidate."""
    found = []
    for row in rows:
        if not row["answerable"]:
            continue
        for reading in row["readings"]:
            right = [c.page in row["gold"] for c in reading.candidates]
            if any(right) and not all(right):
                found.append(([c.features for c in reading.candidates], right))
    return found


def fit_page_choice(rows: Sequence[Row], c: float) -> PageChoiceModel:
    examples = choice_examples(rows)
    x = np.array([[getattr(f, n) for n in PAGE_FEATURES] for fs, _ in examples for f in fs])
    y = np.array([r for _, rs in examples for r in rs])
    fitted = _standardised(x, y, c)
    del fitted["bias"]  # only the order of one phrasing's candidates matters
    return PageChoiceModel(features=list(PAGE_FEATURES), **fitted)


def choice_accuracy(rows: Sequence[Row], model: PageChoiceModel, evidence: EvidenceSettings) -> float:
    """Over the phrasings with a right and a wrong candidate: the chosen page is right."""
    chosen = evidence.model_copy(update={"page_choice": model})
    right = [
        settle_phrasing(reading, chosen).source_id in row["gold"]
        for row in rows
        if row["answerable"]
        for reading in row["readings"]
        if len({c.page in row["gold"] for c in reading.candidates}) == 2
    ]
    return float(np.mean(right)) if right else 0.0


def gate_examples(rows: Sequence[Row], evidence: EvidenceSettings) -> list[tuple[GateFeatures, bool]]:
    """(the gate's features, answers right) of every phrasing of every row, its candidate
    chosen by ``evidence``'s page choice."""
    found = []
    for row in rows:
        for reading in row["readings"]:
            decision = settle_phrasing(reading, evidence)
            found.append((decision.features, row["answerable"] and decision.source_id in row["gold"]))
    return found


def fit_gate(examples: Sequence[tuple[GateFeatures, bool]], c: float) -> AnswerabilityModel:
    x = np.array([[getattr(f, n) for n in GATE_FEATURES] for f, _ in examples])
    y = np.array([r for _, r in examples])
    return AnswerabilityModel(features=list(GATE_FEATURES), **_standardised(x, y, c))


def decided(row: Row, evidence: EvidenceSettings) -> Decided:
    """The row as the product settles it with ``evidence``'s models."""
    decision = settle(row["readings"], evidence, row["subject"])
    return {
        "answerable": row["answerable"],
        "probability": decision.probability,
        "page": decision.source_id,
        "right": row["answerable"] and decision.source_id in row["gold"],
        "group": row["group"],
        "opener": row["opener"],
        "set": row["set"],
        "key": row["key"],
        "twin": row["twin"],
        "switch": row["switch"],
    }


def log_loss(model: AnswerabilityModel, examples: Sequence[tuple[GateFeatures, bool]]) -> float:
    from tasks.operating_points import logistic_probability

    p = np.clip([logistic_probability(model, f) for f, _ in examples], 1e-6, 1 - 1e-6)
    y = np.array([r for _, r in examples], dtype=float)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def held_out(rows: Sequence[Row], evidence: EvidenceSettings, refit_choice: bool) -> dict[str, Any]:
    """Cross-validation over the folds: the page choice's (``refit_choice``; else the
    shipped one, fitted on other data) and the gate's ``C``, and every row decided by the
    models fitted without its fold."""
    folds = sorted({r["fold"] for r in rows})
    split = [([r for r in rows if r["fold"] != f], [r for r in rows if r["fold"] == f]) for f in folds]
    accuracy = {
        c: float(
            np.mean(
                [choice_accuracy(test, fit_page_choice(train, c), evidence) for train, test in split]
            )
        )
        for c in C_VALUES
    }
    accuracy[0.0] = float(
        np.mean([choice_accuracy(test, evidence.page_choice, evidence) for _, test in split])
    )
    choice_c = max(C_VALUES, key=lambda c: (accuracy[c], -abs(np.log(c)))) if refit_choice else 0.0
    choices = [
        fit_page_choice(train, choice_c) if refit_choice else evidence.page_choice for train, _ in split
    ]
    losses: dict[float, list[float]] = {c: [] for c in C_VALUES}
    for (train, test), choice in zip(split, choices, strict=True):
        with_choice = evidence.model_copy(update={"page_choice": choice})
        train_examples, test_examples = (
            gate_examples(train, with_choice),
            gate_examples(test, with_choice),
        )
        for c in C_VALUES:
            losses[c].append(log_loss(fit_gate(train_examples, c), test_examples))
    gate_c = min(C_VALUES, key=lambda c: float(np.mean(losses[c])))
    rows_decided: list[Decided] = []
    for (train, test), choice in zip(split, choices, strict=True):
        with_choice = evidence.model_copy(update={"page_choice": choice})
        gate = fit_gate(gate_examples(train, with_choice), gate_c)
        fold_models = with_choice.model_copy(update={"answerability": gate})
        rows_decided += [decided(r, fold_models) for r in test]
    return {
        "choice_c": choice_c,
        "choice_accuracy": {str(c): round(a, 4) for c, a in accuracy.items()},
        "gate_c": gate_c,
        "gate_log_loss": {str(c): round(float(np.mean(v)), 4) for c, v in losses.items()},
        "decided": rows_decided,
    }


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def inputs(asks: Sequence[Ask], settings: Settings) -> dict[str, str]:
    """The hashes of what the fit reads."""
    pack = any(a.set == "pack" for a in asks)
    return {
        **(
            {
                "pack dialogues.jsonl": sha256(PACK / "dialogues.jsonl"),
                "pack twins.jsonl": sha256(PACK / "twins.jsonl"),
            }
            if pack
            else {}
        ),
        **{
            f"kb {folder.name}": kb_digest(folder, settings)
            for folder in dict.fromkeys(a.kb for a in asks)
        },
        "asks": hashlib.sha256(" ".join(sorted(a.digest() for a in asks)).encode()).hexdigest(),
        "issue cases": sha256(ISSUE_CASES),
        "rules.yaml": RULES_VERSION,
        "cross-encoder model.onnx": model_digest(settings),
    }


def figures(rows_decided: Sequence[Decided], answer_at: float) -> dict[str, dict[str, str]]:
    """Held-out rates at ``answer_at``: the pack (all, openers, later turns, test-like) and the
    written sets."""
    parts: dict[str, list[Decided]] = {
        "pack, all turns": [r for r in rows_decided if r["set"] == "pack"],
        "pack, openers": [r for r in rows_decided if r["set"] == "pack" and r["opener"]],
        "pack, later turns": [
            r for r in rows_decided if r["set"] == "pack" and not r["opener"] and not r["switch"]
        ],
        "pack, changes of page": [r for r in rows_decided if r["switch"]],
        "written sets (examples/kb)": [r for r in rows_decided if r["set"] != "pack"],
    }
    return {
        name: {**with_interval(part, answer_at), "rows": str(len(part))}
        for name, part in parts.items()
        if part
    }


def write_models(
    choice: PageChoiceModel,
    gate: AnswerabilityModel,
    card: dict[str, Any],
    how: str,
    refit_choice: bool,
) -> None:
    rows = card["rows"]
    header = (
        "# Fitted by python -m training.fit_decision --write (see fit_card.json); do not edit by hand.\n"
    )
    fitted_on = f"{rows} turns (doc2dial training pack + twins, written sets); training/fit_decision.py"
    if refit_choice:
        FITTED_PAGE_CHOICE.write_text(
            header
            + yaml.safe_dump(
                choice.model_copy(update={"fitted_on": fitted_on, "rules": RULES_VERSION}).model_dump(),
                sort_keys=False,
                width=100,
            )
        )
    else:  # kept as it was fitted; it reads the features of this rule set, measured here
        kept = FITTED_PAGE_CHOICE.read_text(encoding="utf-8").splitlines(keepends=True)
        kept = [line for line in kept if not line.startswith("rules:")]
        FITTED_PAGE_CHOICE.write_text("".join(kept) + f"rules: '{RULES_VERSION}'\n")
    FITTED_ANSWERABILITY.write_text(
        header
        + yaml.safe_dump(
            gate.model_copy(
                update={"fitted_on": f"{fitted_on}; operating points: {how}", "rules": RULES_VERSION}
            ).model_dump(),
            sort_keys=False,
            width=100,
        )
    )
    CARD.write_text(json.dumps(card, indent=1) + "\n")


def main() -> None:
    apply_telemetry_policy()
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--write", action="store_true", help="write the shipped assets and card")
    parser.add_argument("--limit", type=int, default=0, help="only the first N asks of each set")
    parser.add_argument(
        "--sets", choices=("all", "pack", "written"), default="all", help="which asks to fit on"
    )
    parser.add_argument("--cache", type=Path, default=CACHE, help="readings kept by content hash")
    parser.add_argument("--card", type=Path, help="write the card here (with --limit: a test's)")
    parser.add_argument(
        "--keep-page-choice",
        action="store_true",
        help="keep the shipped page choice; refit the gate only (measured against the refit)",
    )
    parser.add_argument(
        "--reader", type=Path, help="another cross-encoder's folder (a candidate reader, measured)"
    )
    parser.add_argument(
        "--folds", help="only these folds, e.g. 3,4: those a candidate reader was not trained on"
    )
    args = parser.parse_args()
    settings = load_settings()
    settings = settings.model_copy(update={"turn_timeout_s": 600})  # a row records the whole turn
    if args.reader:
        evidence = settings.evidence.model_copy(update={"model_dir": args.reader})
        settings = settings.model_copy(update={"evidence": evidence})
    asks = fitting_asks(
        pack=args.sets in ("all", "pack"), written=WRITTEN if args.sets in ("all", "written") else ()
    )
    if args.limit:
        asks = first_of_each_set(asks, args.limit)
    if args.folds:
        kept_folds = {int(f) for f in args.folds.split(",")}
        asks = [a for a in asks if a.fold in kept_folds]
    recorded = record(asks, settings, args.cache)
    rows = featurized(asks, recorded, settings, args.cache)
    evidence = settings.evidence
    result = held_out(rows, evidence, not args.keep_page_choice)
    rows_decided = result["decided"]
    pack_decided = [r for r in rows_decided if r["set"] == "pack"] or rows_decided
    curve = risk_coverage(pack_decided)
    answer_at, refuse_below, how = operating_point(pack_decided, curve, evidence.target_precision)
    choice = (
        fit_page_choice(rows, result["choice_c"]) if not args.keep_page_choice else evidence.page_choice
    )
    gate = fit_gate(
        gate_examples(rows, evidence.model_copy(update={"page_choice": choice})), result["gate_c"]
    ).model_copy(update={"answer_at": answer_at, "refuse_below": refuse_below})
    shipped = evidence.model_copy(update={"page_choice": evidence.page_choice})
    shipped_decided = [decided(r, shipped) for r in rows]
    shipped_at = shipped.answerability.answer_at
    card = {
        "command": "python -m training.fit_decision --write",
        "seed": SEED,
        "folds": FOLDS,
        "rows": len(rows),
        "rows_by_set": {
            s: {
                "answerable": sum(r["answerable"] for r in rows if r["set"] == s),
                "unanswerable": sum(not r["answerable"] for r in rows if r["set"] == s),
            }
            for s in dict.fromkeys(r["set"] for r in rows)
        },
        "inputs": inputs(asks, settings),
        "rules_version": RULES_VERSION,
        "page_choice": {
            "refitted": not args.keep_page_choice,
            "c": result["choice_c"],
            "held_out_accuracy_by_c (0: the shipped model)": result["choice_accuracy"],
        },
        "gate": {"c": result["gate_c"], "held_out_log_loss_by_c": result["gate_log_loss"]},
        "answer_at": answer_at,
        "refuse_below": refuse_below,
        "operating_points": how,
        "held_out": figures(rows_decided, answer_at),
        "shipped_before_in_sample": figures(shipped_decided, shipped_at),
        "curve": curve,
        "models": {
            "page_choice": dict(zip(choice.features, choice.weights, strict=True)),
            "gate": dict(zip(gate.features, gate.weights, strict=True)),
        },
        "net_right_at_answer_at": net_right(pack_decided, answer_at),
    }
    full = not args.limit and args.sets == "all" and not args.folds and not args.reader
    if full:  # the figures of record: a small fit prints, never overwrites them
        report(card, rows_decided, curve, answer_at, shipped_decided, shipped_at)
    else:
        print(json.dumps(card["held_out"], indent=1))
    if args.card:
        args.card.write_text(json.dumps(card, indent=1) + "\n")
    if args.write:
        if not full:
            parser.error("--write fits every set in full: leave out --limit and --sets")
        write_models(choice, gate, card, how, not args.keep_page_choice)
        print(f"written: {FITTED_PAGE_CHOICE.name}, {FITTED_ANSWERABILITY.name}, {CARD.name}")


def figures_table(title: str, figures_by_part: dict[str, dict[str, str]]) -> list[str]:
    """One Markdown table of held-out figures, a row per part (``figures``' output)."""
    return table(
        (title, "rows", "answered right", "refused (unanswerable)", "precision", "wrong answers"),
        [
            (name, f["rows"], f["answered_right"], f["refused"], f["precision"], f["wrong_answers"])
            for name, f in figures_by_part.items()
        ],
    )


def report(
    card: dict[str, Any],
    rows_decided: Sequence[Decided],
    curve: Sequence[dict[str, float]],
    answer_at: float,
    shipped_decided: Sequence[Decided],
    shipped_at: float,
) -> None:
    """bench/results/fit_decision.{md,json} and the curves' picture."""
    lines = [
        "# The answer decision, one fit (training/fit_decision.py)",
        "",
        f"{card['rows']} rows; page choice C={card['page_choice']['c']}, "
        f"gate C={card['gate']['c']}; answer_at {card['answer_at']}, "
        f"refuse_below {card['refuse_below']} ({card['operating_points']}).",
        "Held out: each row decided by the models fitted without its fold (5 folds, the pack's by "
        "page cluster); 95 % bootstrap intervals over held-out groups.",
        "",
        *figures_table("held out", card["held_out"]),
        "",
        f"The models shipped before, on the same rows (fitted on other data; answer_at {shipped_at}):",
        "",
        *figures_table("shipped before", card["shipped_before_in_sample"]),
        "",
        "Gate weights (standardised): "
        + ", ".join(f"{n} {w:+.2f}" for n, w in card["models"]["gate"].items()),
        "",
        "Page choice weights (standardised): "
        + ", ".join(f"{n} {w:+.2f}" for n, w in card["models"]["page_choice"].items()),
        "",
    ]
    write_results("fit_decision", lines, card)
    openers = [r for r in rows_decided if r["set"] == "pack" and r["opener"]]
    later = [r for r in rows_decided if r["set"] == "pack" and not r["opener"]]
    written = [r for r in rows_decided if r["set"] != "pack"]
    curves = {
        "pack, all (held out)": list(curve),
        "pack, openers": risk_coverage(openers),
        "pack, later turns": risk_coverage(later),
        "written sets": risk_coverage(written),
        "shipped before, pack": risk_coverage([r for r in shipped_decided if r["set"] == "pack"]),
    }
    marks = {name: answer_at for name in curves}
    marks["shipped before, pack"] = shipped_at
    plot_risk_coverage(
        {k: v for k, v in curves.items() if v}, PLOT, marks, "The decision on held-out folds"
    )


if __name__ == "__main__":
    main()
