"""Replay customer questions through a runtime (``tasks/replay.py`` has what is replayed
and how a change is read): each question a first turn with no customer id, so nothing is
stored.

Usage::

    before = replies(runtime_now, asked)
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from storage.retrieval.filters import SlotError, build_filters
from tasks.replay import Asked, Reply, reply_of


def replies(runtime: Any, asked: Sequence[Asked]) -> list[Reply]:
    """Each question answered as a first turn by ``runtime`` (an ``agents.turn.TurnRuntime``);
    no customer id, so nothing is stored. A question whose slots the runtime's rules refuse
    (a plan the configuration and the pages no longer name) is not run: its reply is an
    ``error`` naming why, which ``tasks.replay.change_of`` counts as lost."""
    from agents.turn import run_turn
    from tasks.schemas import TurnRequest

    found = []
    for question in asked:
        try:  # slots the runtime's rules refuse: a question this setup cannot run, said so
            build_filters(runtime.settings.slots, question.slots, strict=False)
        except SlotError as exc:
            found.append(Reply(verdict="error", pages=[], answer=f"not run: {exc}"))
            continue
        result = run_turn(
            TurnRequest(
                session_id=f"replay-{uuid.uuid4().hex[:12]}",
                message=question.text,
                slots=question.slots,
            ),
            runtime,
        )
        found.append(reply_of(result))
    return found
