"""Replay recent real customer questions against a change before it goes live: the same
questions, each with the slots it was asked under, answered by the knowledge base and
configuration as they are and as they would be, and what would change for the customers.

A question is one a customer really asked (a stored turn read as a question, not courtesy,
a yes / no or a request for a person), the most recent ``limit`` of the last days, each
text once. Each is asked as a first turn with no customer id, so nothing is stored. The
comparison per question:

    newly_answered   refused or offered a page before, answered after
    lost             answered before, not after, or failing after (a slot value the rules
                     refuse, a bug: verdict error): a change that loses answers fails CI
    moved            answered both times, from another page
    same             the same verdict and pages

Usage::

    asked = recent_questions(memory, tenant="", since=time.time() - 30 * 86_400)
    before = evaluation.replay.replies(runtime_now, asked)   # each a turn, nothing stored
    after = evaluation.replay.replies(runtime_changed, asked)
    changes = compare(asked, before, after)
    summary(changes)          # {"newly_answered": 1, "lost": 0, "moved": 0, "same": 12}
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from tasks.message_kind import asked_something
from tasks.schemas import Verdict

ChangeKind = Literal["newly_answered", "lost", "moved", "same"]
CHANGES: tuple[ChangeKind, ...] = ("newly_answered", "lost", "moved", "same")
QUESTION_FIELDS = ("user", "kind", "slots", "ts", "verdict", "status")
NEAR_FLOOR = 0.35  # a recent question this close (cosine, MiniLM) to an article is about it


class Asked(BaseModel):
    """A customer's question and the slots it was asked under (tenant, tier, access...)."""

    model_config = ConfigDict(frozen=True)

    text: str
    slots: dict[str, str]


class Reply(BaseModel):
    verdict: Verdict
    pages: list[str]
    answer: str


class Change(BaseModel):
    question: str
    slots: dict[str, str]
    change: ChangeKind
    before: Reply
    after: Reply


def recent_questions(memory: Any, tenant: str, since: float, limit: int = 200) -> list[Asked]:
    """The tenant's customer questions asked since ``since``, newest first, each text once
    (under the slots it was first seen with), at most ``limit``.

    ``memory``: a ``storage.memory.MemoryStore`` (``tenant_turns``)."""
    turns = [
        t
        for t in memory.tenant_turns(tenant, QUESTION_FIELDS)
        if float(t.get("ts", 0.0)) >= since and t.get("status") != "pending"
    ]
    seen: dict[str, Asked] = {}
    for turn in sorted(turns, key=lambda t: -float(t.get("ts", 0.0))):
        text = str(turn.get("user", "")).strip()
        if text and text not in seen and asked_something(turn):
            slots = {str(k): str(v) for k, v in (turn.get("slots") or {}).items()}
            seen[text] = Asked(text=text, slots=slots)
        if len(seen) >= limit:
            break
    return list(seen.values())


def reply_of(result: Any) -> Reply:
    """A turn's result (``tasks.schemas.TurnResult``) as the replay compares it."""
    return Reply(
        verdict=result.verdict,
        pages=list(dict.fromkeys(c.source_id for c in result.citations)),
        answer=result.answer,
    )


def change_of(before: Reply, after: Reply) -> ChangeKind:
    """What a change does to one question.

    >>> change_of(Reply(verdict="idk", pages=[], answer=""),
    ...           Reply(verdict="answered", pages=["a.md"], answer="..."))
    'newly_answered'
    >>> failed = Reply(verdict="error", pages=[], answer="")
    >>> change_of(failed, failed)
    'lost'
    """
    was, now = before.verdict == "answered", after.verdict == "answered"
    if (was and not now) or after.verdict == "error":  # a turn that fails is no answer kept
        return "lost"
    if now and not was:
        return "newly_answered"
    if was and now and before.pages[:1] != after.pages[:1]:
        return "moved"
    return "same"


def compare(asked: Sequence[Asked], before: Sequence[Reply], after: Sequence[Reply]) -> list[Change]:
    return [
        Change(question=q.text, slots=q.slots, change=change_of(b, a), before=b, after=a)
        for q, b, a in zip(asked, before, after, strict=True)
    ]


def summary(changes: Sequence[Change]) -> dict[str, int]:
    """How many questions each kind of change touched (every kind, 0 included)."""
    counted = Counter(c.change for c in changes)
    return {kind: counted[kind] for kind in CHANGES}


def nearest_questions(
    encode: Any, text: str, asked: Sequence[Asked], top: int, floor: float = NEAR_FLOOR
) -> list[Asked]:
    """The ``top`` of ``asked`` whose meaning is closest to ``text`` (cosine of the encoder's
    vectors, at least ``floor``): the recent questions an article is about."""
    if not asked:
        return []
    vectors = np.array([v.dense for v in encode([text, *(q.text for q in asked)])], dtype=float)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-9
    similarity = vectors[1:] @ vectors[0]
    ranked = [i for i in np.argsort(-similarity) if similarity[i] >= floor]
    return [asked[i] for i in ranked[:top]]
