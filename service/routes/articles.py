"""From a knowledge gap to a tested article (admin keys; ``service/articles.py``): draft from
people's replies, save as a hidden draft, check against the gap's questions, publish.

Usage (an admin key)::

    client.post("/v1/articles/draft", json={"questions": ["Do you ship to Antarctica?"]})
    client.post("/v1/articles", json={"slug": "shipping", "title": "...", "text": "...",
                                      "access": "public", "questions": [...]})
    client.post("/v1/articles/shipping/check")
    client.post("/v1/articles/shipping/publish")
    client.get("/v1/articles")
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal, TypeVar

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from agents.turn import run_turn
from service.articles import ArticleDraft, ArticleError, ArticleRecord, draft, normal
from service.auth import Caller
from service.context import Admin, Pilot, PilotContext
from service.domain.records import StoredArticle
from service.errors import ApiError
from service.model_draft import model_writer
from service.staff_reads import staff_slots
from tasks.replay import Asked, nearest_questions, recent_questions
from tasks.schemas import PlainText, TurnRequest, TurnResult

router = APIRouter(prefix="/v1/articles", tags=["articles"])
T = TypeVar("T")


class DraftRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    questions: list[PlainText] = Field(min_length=1, max_length=50)


class DraftProposal(BaseModel):
    title: str
    slug: str
    text: str
    sources: list[dict[str, object]]
    questions: list[str]
    drafted_by: Literal["replies", "model", "skeleton"] = Field(
        description="who wrote the draft: people's replies, the model (where nobody replied "
        "and the responder is on the model path; checked against the knowledge base), or "
        "the skeleton of the questions"
    )
    unsupported: list[str] = Field(
        default_factory=list,
        description="the model's sentences the knowledge base does not support, each also "
        "marked in the text: check them before saving",
    )
    pages: list[str] = Field(
        default_factory=list, description="the knowledge-base pages the model's draft rests on"
    )
    access: str = Field(
        "public",
        description="the highest access level among the conversations whose replies it "
        "quotes: save and publish it at this level (lower is refused)",
    )


class PublishRequest(BaseModel):
    """Publishing while some of the article's questions still fail its last check is the
    lead's explicit choice: each of them named here (else 409 naming them, ``failing``)."""

    model_config = ConfigDict(extra="forbid")
    despite: list[PlainText] = Field(default_factory=list, max_length=50)


async def _run(call: Callable[..., T], *args: object) -> T:
    try:
        return await run_in_threadpool(call, *args)
    except ArticleError as exc:
        raise ApiError(exc.status, "invalid_article", str(exc), exc.details, field=exc.field) from None


@router.post("/draft", response_model=DraftProposal)
async def draft_article(body: DraftRequest, who: Admin, pilot: Pilot) -> DraftProposal:
    """A draft from the replies people wrote to these questions, each sentence's source;
    where nobody replied, the model's draft checked against the knowledge base (with the
    responder on the model path), else the skeleton of the questions."""
    slots = staff_slots(who)
    write = model_writer(pilot.runtime, slots)
    proposal = await run_in_threadpool(
        draft,
        pilot.memory,
        who.tenant,
        body.questions,
        slots,
        write,
        pilot.runtime.scorer.answerable,
    )
    return DraftProposal(**proposal)


@router.post("", response_model=ArticleRecord, status_code=201)
async def save_article(body: ArticleDraft, who: Admin, pilot: Pilot) -> ArticleRecord:
    """Write the article and ingest it as a draft (hidden from customers and staff searches
    alike until it is published); within the key's own slots."""
    kb = pilot.runtime.knowledge_base()
    record = await _run(pilot.articles.save, who.tenant, who.key_name, staff_slots(who), body, kb)
    return ArticleRecord(**record)


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


@router.post("/{slug}/check", response_model=ArticleRecord)
async def check_article(slug: str, who: Admin, pilot: Pilot) -> ArticleRecord:
    """Replay the article's questions against the knowledge base with the draft in it."""
    return ArticleRecord(**await _run(run_check, pilot, who, slug))


@router.post("/{slug}/publish", response_model=ArticleRecord)
async def publish_article(
    slug: str, who: Admin, pilot: Pilot, body: PublishRequest | None = None
) -> ArticleRecord:
    """Give the article its access level and its URL on this service (``pilot.public_url``,
    never the request's Host; 409 before a check answered from it, and while one of its
    questions still fails the check unless ``despite`` names each: the answer's ``failing``
    lists them; 404 for an article the key may not read)."""
    kb = pilot.runtime.knowledge_base()
    base = pilot.settings.pilot.public_url or ""
    despite = body.despite if body is not None else []
    record = await _run(
        pilot.articles.publish, who.tenant, who.key_name, staff_slots(who), slug, kb, base, despite
    )
    pilot.gap_reports.clear()  # the gaps it answers read addressed at once
    return ArticleRecord(**record)


@router.get("", response_model=list[ArticleRecord])
async def articles(who: Admin, pilot: Pilot) -> list[ArticleRecord]:
    """The tenant's articles the key may read, the latest changed first, with their history."""
    found = await run_in_threadpool(pilot.articles.all, who.tenant, staff_slots(who))
    return [ArticleRecord(**r) for r in found]
