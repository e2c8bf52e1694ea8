"""Labelled question sets for measuring answers: answerable or not, which documents answer.

Two layouts are read:

* a **pack** (doc2dial-support): ``kb/`` plus ``questions.jsonl`` with ``id``, ``question``,
  ``answerable``, ``doc_ids`` and optionally ``evidence`` (gold spans). An optional
  ``dataset.yaml`` names another ``kb`` folder (relative to the pack) and the ``slots`` the
  questions are asked under (examples/answer-sets/ use it for examples/kb).
* **BEIR-like**: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``; a query with
  relevant documents is answerable, a query no qrels file judges is not (queries of other
  splits are left out).

Usage::

    answer_set = load_answer_set(Path("../shared/datasets/doc2dial-support-dev"))
    answer_set.kb, len(answer_set.questions), answer_set.slots
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evaluation.retrieval import DatasetError, load_beir

DEFAULT_SLOTS = {"access_level": "public"}


class LabelledQuestion(BaseModel):
    """One question and what answers it."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    answerable: bool
    doc_ids: list[str] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)
    answer: str | None = None  # a reference reply, where the set has one (doc2dial: the agent's)


class PackSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kb: str = "kb"
    slots: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_SLOTS))


@dataclass
class AnswerSet:
    name: str
    kb: Path
    questions: list[LabelledQuestion]
    slots: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_SLOTS))


def _pack(directory: Path) -> AnswerSet:
    settings = PackSettings()
    described = directory / "dataset.yaml"
    if described.is_file():
        try:
            settings = PackSettings.model_validate(yaml.safe_load(described.read_text()) or {})
        except (yaml.YAMLError, ValidationError) as error:
            raise DatasetError(f"{described}: {error}") from None
    kb = (directory / settings.kb).resolve()
    if not kb.exists():
        raise DatasetError(f"{directory}: the knowledge base folder {settings.kb!r} does not exist")
    questions = []
    lines = (directory / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row: Any = json.loads(line)
            questions.append(LabelledQuestion.model_validate(row))
        except (json.JSONDecodeError, ValidationError) as error:
            raise DatasetError(f"{directory / 'questions.jsonl'} line {number}: {error}") from None
    _check(directory, questions)
    return AnswerSet(directory.name, kb, questions, settings.slots)


def _beir(directory: Path, split: str) -> AnswerSet:
    beir = load_beir(directory, split, keep_unjudged=True)
    judged_elsewhere = set()
    for other in (directory / "qrels").glob("*.tsv"):
        if other.stem != split:
            judged_elsewhere |= {line.split("\t")[0] for line in other.read_text().splitlines()[1:]}
    queries = {
        qid: text
        for qid, text in beir.queries.items()
        if qid in beir.qrels or qid not in judged_elsewhere
    }
    questions = [
        LabelledQuestion(
            id=qid,
            question=text,
            answerable=bool(beir.qrels.get(qid)),
            doc_ids=[d for d, s in beir.qrels.get(qid, {}).items() if s > 0],
        )
        for qid, text in queries.items()
    ]
    _check(directory, questions)
    return AnswerSet(directory.name, beir.corpus, questions)


def _check(directory: Path, questions: list[LabelledQuestion]) -> None:
    if not questions:
        raise DatasetError(f"{directory}: no questions")
    wrong = [q.id for q in questions if q.answerable != bool(q.doc_ids)]
    if wrong:
        raise DatasetError(
            f"{directory}: answerable questions need doc_ids and unanswerable ones "
            f"none; check {', '.join(wrong[:5])}"
        )


def load_answer_set(directory: Path, split: str = "test") -> AnswerSet:
    """Read a pack or a BEIR-like folder; :class:`DatasetError` names what is wrong."""
    directory = Path(directory)
    if not directory.is_dir():
        raise DatasetError(f"{directory}: not a folder")
    if (directory / "questions.jsonl").is_file():
        return _pack(directory)
    if (directory / "corpus.jsonl").is_file():
        return _beir(directory, split)
    raise DatasetError(
        f"{directory}: neither a pack (kb/ and questions.jsonl) nor BEIR-like "
        "(corpus.jsonl, queries.jsonl, qrels/)"
    )
