"""The article flow's rules beside the article store (``service/stores/articles.py``): a draft from
people's replies (else the model's, checked, else a skeleton) under the lead's own slots, and
the check that replays the article's questions and the recent customer questions nearest it
(the last :data:`REPLAY_DAYS` days, at most :data:`REPLAY_NEAR`). The routes
(``service/routes/articles.py``) parse, authorize, call one of these and answer.

Usage::

    proposal = draft_article(pilot, who, ["Do you ship to Antarctica?"])
    record = run_check(pilot, who, "shipping")     # the stored article with its last check
"""

from __future__ import annotations

import time

from agents.turn import run_turn
from service.auth import Caller
from service.context import PilotContext
from service.domain.model_draft import model_writer
from service.domain.records import StoredArticle
from service.domain.staff_reads import staff_slots
from service.domain.views import DraftProposal
from service.stores.articles import draft, normal
from tasks.replay import Asked, nearest_questions, recent_questions
from tasks.schemas import TurnRequest, TurnResult


def draft_article(pilot: PilotContext, who: Caller, questions: list[str]) -> DraftProposal:
    """A draft from the replies people wrote to ``questions``, each sentence's source; where
    nobody replied, the model's draft checked against the knowledge base, else a skeleton."""
    slots = staff_slots(who)
    write = model_writer(pilot.runtime, slots)
    return draft(pilot.memory, who.tenant, questions, slots, write, pilot.runtime.scorer.answerable)


REPLAY_DAYS = 30  # the check replays customer questions of this many last days ...
REPLAY_NEAR = 8  # ... at most this many, the nearest to the article


def run_check(pilot: PilotContext, who: Caller, slug: str) -> StoredArticle:
    """The check's turns, under the key's own enforced slots and the draft's."""

    def ask(question: str, slots: dict[str, str]) -> TurnResult:
        return run_turn(
            TurnRequest(session_id=f"check-{slug}", message=question, slots=slots), pilot.runtime
        )

    def recent(record: StoredArticle) -> list[Asked]:
        """The last ``REPLAY_DAYS`` days' customer questions nearest the article (not its own)."""
        memory = pilot.runtime.memory
        if memory is None:
            return []
        own = {normal(q) for q in record.get("questions") or []}
        since = time.time() - REPLAY_DAYS * 86_400.0
        asked = [q for q in recent_questions(memory, who.tenant, since) if normal(q.text) not in own]
        return nearest_questions(
            memory.encoders.dense.encode, record.get("text", ""), asked, REPLAY_NEAR
        )

    return pilot.articles.check(who.tenant, who.key_name, staff_slots(who), slug, ask, recent)
