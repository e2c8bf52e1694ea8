"""Fit the message-kind classifier (``tasks/message_kind.py``) and measure it beside the rules
it replaced.

Data (labels in ``examples/intents/``, read the data card in ``MODEL_CARD.md`` beside the
model):

- ``message_kinds.jsonl``: messages we wrote, one label each: ``question``, ``problem`` (a
  report of what went wrong), ``follow_up`` (a question that leans on the conversation),
  ``greeting``, ``thanks`` (courtesy that opens or closes), ``yes``, ``no`` (a reply to what
  the assistant offered), ``person`` (asks for a person: the old hand-off intent's examples),
  ``contact`` (leaves an email or a phone number);
- ``doc2dial_kinds.jsonl``: 300 customer turns of the doc2dial training pack, sampled with
  seed 7 and labelled by hand; only their ids are in the repo, the texts are read from
  ``../shared/datasets/doc2dial-support-train``.

About 30 % is held out (seed 13), stratified by label and grouped by near copy (messages
whose embeddings are within cosine 0.9 of each other, or that read the same without
punctuation, stay on one side); C is chosen by 5-fold cross-validation on the rest. No
message quoted in an issue is an example (``examples/regression/issue_cases.yaml``; a test
checks).
Held-out precision and recall per label are reported beside the rules of main 3cc638d
(the hand-off intent, the yes / no word sets, the courtesy word list, the follow-up pattern),
read as labels. The shipped weights are then fitted on every example and written with the
model card to ``storage/kb/assets/message_kind/``.

    python -m training.message_kind [--dry-run]
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import precision_recall_fscore_support
from sklearn.model_selection import GridSearchCV, StratifiedGroupKFold, cross_val_predict

from config.settings import load_settings
from config.telemetry import apply_telemetry_policy
from evaluation.reporting import ROOT, table, write_results
from storage.kb.embeddings import load_encoders
from tasks.message_kind import LABELS, MODEL_FILE, MessageKinds
from training.replaced_kind_rules import (
    closing,
    courtesy_only,
    leans_on_the_answer,
    old_handoff_intent,
    reply,
)

WRITTEN = ROOT / "examples" / "intents" / "message_kinds.jsonl"
DOC2DIAL_LABELS = ROOT / "examples" / "intents" / "doc2dial_kinds.jsonl"
PACK = ROOT.parent / "shared" / "datasets" / "doc2dial-support-train" / "dialogues.jsonl"
SEED = 13
NEAR_COPY = 0.9  # cosine at which two examples are one (kept on one side of the split)
C_GRID = [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0]
PERSON_PRECISION = 0.9  # a false hand-off costs the customer an answer
THRESHOLDS = [round(0.2 + 0.05 * n, 2) for n in range(13)]  # 0.2 ... 0.8
# the route each label takes at intake (no offer pending): what a wrong label costs
ROUTE = {
    "question": "question",
    "problem": "question",
    "follow_up": "question",
    "greeting": "greeting",
    "thanks": "thanks",
    "yes": "yes",
    "no": "no",
    "person": "person",
    "contact": "contact",
}


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def examples() -> tuple[list[str], list[str], list[str]]:
    """(texts, labels, sources) of every labelled message."""
    texts, labels, sources = [], [], []
    for row in _lines(WRITTEN):
        texts.append(row["text"])
        labels.append(row["kind"])
        sources.append("written")
    said = {(d["id"], t["turn"]): " ".join(t["text"].split()) for d in _lines(PACK) for t in d["turns"]}
    for row in _lines(DOC2DIAL_LABELS):
        texts.append(said[(row["dialogue"], row["turn"])])
        labels.append(row["kind"])
        sources.append("doc2dial")
    unknown = sorted(set(labels) - set(LABELS))
    if unknown:
        raise ValueError(f"labels {unknown} are not message kinds {LABELS}")
    return texts, labels, sources


def rules_label(text: str, asks_for_person: Callable[[str], bool]) -> str:
    """What the rules of main 3cc638d made of a message, as one of :data:`LABELS`."""
    if asks_for_person(text):
        return "person"
    said = reply(text)
    if said is not None:
        return said
    if courtesy_only(text) and not leans_on_the_answer(text):
        return "thanks" if closing(text) else "greeting"
    return "follow_up" if leans_on_the_answer(text) else "question"


def per_label(truth: Sequence[str], said: Sequence[str]) -> dict[str, tuple[float, float, int]]:
    precision, recall, _, support = precision_recall_fscore_support(
        truth, said, labels=list(LABELS), zero_division=0
    )
    return {
        label: (round(float(p), 3), round(float(r), 3), int(n))
        for label, p, r, n in zip(LABELS, precision, recall, support, strict=True)
    }


def fitted(model: LogisticRegression, person_at: float, card: dict) -> dict:
    """The model file's content: what :class:`tasks.message_kind.MessageKinds` reads."""
    return {
        "labels": [str(c) for c in model.classes_],
        "weights": model.coef_.round(6).tolist(),
        "bias": model.intercept_.round(6).tolist(),
        "person_at": person_at,
        "card": card,
    }


def person_threshold(vectors: np.ndarray, labels: np.ndarray, c: float) -> float:
    """The lowest probability of ``person`` whose out-of-fold precision (5 folds of the
    training split) is at least :data:`PERSON_PRECISION`: as many requests for a person met
    as a false hand-off's cost allows."""
    probabilities = cross_val_predict(
        LogisticRegression(class_weight="balanced", max_iter=4000, C=c),
        vectors,
        labels,
        cv=5,
        method="predict_proba",
    )[:, sorted(set(labels)).index("person")]
    asks = labels == "person"
    for threshold in THRESHOLDS:
        said = probabilities >= threshold
        if said.sum() and (said & asks).sum() / said.sum() >= PERSON_PRECISION:
            return threshold
    return THRESHOLDS[-1]


def near_copy_groups(vectors: np.ndarray) -> np.ndarray:
    """A group id per example: examples within cosine 0.9 of each other share one (linked)."""
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    close = unit @ unit.T >= NEAR_COPY
    group = np.arange(len(vectors))
    for i in range(len(vectors)):  # union of linked examples, smallest id wins
        linked = np.flatnonzero(close[i])
        group[np.isin(group, group[linked])] = group[linked].min()
    return group


def grouped_split(vectors: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """About 30 % held out, stratified by label, no near copy on both sides."""
    folds = StratifiedGroupKFold(n_splits=3, shuffle=True, random_state=SEED)
    train, held = next(folds.split(vectors, y, near_copy_groups(vectors)))
    return train, held


def main() -> None:
    apply_telemetry_policy()  # where the training process starts
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dry-run", action="store_true", help="measure; write no model file")
    args = parser.parse_args()
    texts, labels, sources = examples()
    encoders = load_encoders(load_settings())

    def embed(batch: Sequence[str]) -> np.ndarray:
        return np.stack([e.dense for e in encoders.dense.encode(list(batch))])

    vectors = embed(texts)
    y = np.array(labels)
    train, held = grouped_split(vectors, y)
    search = GridSearchCV(
        LogisticRegression(class_weight="balanced", max_iter=4000),
        {"C": C_GRID},
        cv=5,
        scoring="f1_macro",
    )
    search.fit(vectors[train], y[train])
    model = search.best_estimator_

    best_c = float(search.best_params_["C"])
    person_at = person_threshold(vectors[train], y[train], best_c)
    kinds = MessageKinds(encoders, fitted(model, person_at, {}))

    def read(text: str) -> str:
        return kinds.read(text).label

    asks_for_person = old_handoff_intent(encoders)
    held_texts = [texts[i] for i in held]
    held_truth = [labels[i] for i in held]
    ours = [read(t) for t in held_texts]
    rules = [rules_label(t, asks_for_person) for t in held_texts]
    learned, ruled = per_label(held_truth, ours), per_label(held_truth, rules)
    accuracy = {
        name: round(sum(a == b for a, b in zip(said, held_truth, strict=True)) / len(held), 3)
        for name, said in (("learned", ours), ("rules", rules))
    }
    routed = {
        name: round(
            sum(ROUTE[a] == ROUTE[b] for a, b in zip(said, held_truth, strict=True)) / len(held), 3
        )
        for name, said in (("learned", ours), ("rules", rules))
    }
    asked = [n for n, truth in enumerate(held_truth) if ROUTE[truth] == "question"]
    unsearched = {
        name: sum(ROUTE[said[n]] != "question" for n in asked)
        for name, said in (("learned", ours), ("rules", rules))
    }
    wrong = [
        f"{t!r}: {truth} read as {s}"
        for t, truth, s in zip(held_texts, held_truth, ours, strict=True)
        if s != truth
    ]
    counts = {label: labels.count(label) for label in LABELS}
    lines = [
        "# Message kinds: what a customer's message is",
        "",
        f"{len(texts)} labelled messages ({sources.count('written')} written, "
        f"{sources.count('doc2dial')} doc2dial training-pack turns labelled by hand), "
        f"{len(held)} held out (stratified by label, seed {SEED}); C = {best_c:g} by 5-fold "
        f"cross-validation on the rest; `person` when the whole message or any sentence reads "
        f">= {person_at} (the lowest threshold whose cross-validated precision is >= "
        f"{PERSON_PRECISION}), else the most probable other label.",
        "",
        f"Held-out accuracy: learned {accuracy['learned']}, rules {accuracy['rules']}. "
        f"Routed the same way as the label (a question of any kind, a greeting, thanks, yes, "
        f"no, a person, contact): learned {routed['learned']}, rules {routed['rules']}. "
        f"Questions, problems and follow-ups not searched (read as courtesy, yes / no, a "
        f"person or contact details): learned {unsearched['learned']} of {len(asked)}, rules "
        f"{unsearched['rules']}.",
        "",
        *table(
            ["label", "examples", "held out", "learned P / R", "rules P / R"],
            [
                [
                    label,
                    counts[label],
                    learned[label][2],
                    f"{learned[label][0]} / {learned[label][1]}",
                    f"{ruled[label][0]} / {ruled[label][1]}",
                ]
                for label in LABELS
            ],
        ),
        "",
        "Held-out messages the classifier reads wrong:",
        "",
        *[f"- {w}" for w in wrong],
    ]
    write_results(
        "message_kind",
        lines,
        {
            "learned": learned,
            "rules": ruled,
            "accuracy": accuracy,
            "routed": routed,
            "unsearched": unsearched,
        },
    )
    if args.dry_run:
        return
    final = LogisticRegression(class_weight="balanced", max_iter=4000, C=best_c)
    final.fit(vectors, y)
    digest = hashlib.sha256(WRITTEN.read_bytes() + DOC2DIAL_LABELS.read_bytes()).hexdigest()
    card = {
        "data": "examples/intents/message_kinds.jsonl + examples/intents/doc2dial_kinds.jsonl",
        "data_sha256": digest,
        "examples": counts,
        "seed": SEED,
        "C": best_c,
        "person_at": "the lowest threshold with out-of-fold precision >= "
        f"{PERSON_PRECISION} (5 folds of every example); {person_at} on the training split",
        "held_out_accuracy": accuracy,
        "held_out_routed": routed,
        "held_out_questions_unsearched": {**unsearched, "of": len(asked)},
        "held_out_per_label": {"learned": learned, "rules": ruled},
        "fitted_by": "python -m training.message_kind",
    }
    written = fitted(final, person_threshold(vectors, y, best_c), card)
    MODEL_FILE.parent.mkdir(parents=True, exist_ok=True)
    MODEL_FILE.write_text(json.dumps(written) + "\n", encoding="utf-8")
    print(f"wrote {MODEL_FILE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
