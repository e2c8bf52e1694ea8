"""From a knowledge gap to a tested article (admin keys; ``service/stores/articles.py``): draft from
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

from collections.abc import Callable
from typing import TypeVar

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from service.context import Admin, Pilot
from service.domain import articles as domain
from service.domain.staff_reads import staff_slots
from service.domain.views import DraftProposal
from service.errors import ApiError
from service.stores.articles import ArticleDraft, ArticleError, ArticleRecord
from tasks.schemas import PlainText

router = APIRouter(prefix="/v1/articles", tags=["articles"])
T = TypeVar("T")


class DraftRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    questions: list[PlainText] = Field(min_length=1, max_length=50)


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
    return await run_in_threadpool(domain.draft_article, pilot, who, body.questions)


@router.post("", response_model=ArticleRecord, status_code=201)
async def save_article(body: ArticleDraft, who: Admin, pilot: Pilot) -> ArticleRecord:
    """Write the article and ingest it as a draft (hidden from customers and staff searches
    alike until it is published); within the key's own slots."""
    kb = pilot.runtime.knowledge_base()
    record = await _run(pilot.articles.save, who.tenant, who.key_name, staff_slots(who), body, kb)
    return ArticleRecord(**record)


@router.post("/{slug}/check", response_model=ArticleRecord)
async def check_article(slug: str, who: Admin, pilot: Pilot) -> ArticleRecord:
    """Replay the article's questions against the knowledge base with the draft in it."""
    return ArticleRecord(**await _run(domain.run_check, pilot, who, slug))


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
