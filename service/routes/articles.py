"""From a knowledge gap to a tested article (admin keys; ``service/articles.py``): draft from
people's replies, save as an internal draft, check against the gap's questions, publish.

Usage (an admin key)::

    client.post("/v1/articles/draft", json={"questions": ["Do you ship to Antarctica?"]})
    client.post("/v1/articles", json={"slug": "shipping", "title": "...", "text": "...",
                                      "access": "public", "questions": [...]})
    client.post("/v1/articles/shipping/check")
    client.post("/v1/articles/shipping/publish")
    client.get("/v1/articles")
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from agents.turn import run_turn
from service.articles import ArticleDraft, ArticleError, ArticleRecord, draft
from service.auth import Caller
from service.context import Admin, Pilot, PilotContext
from service.errors import ApiError
from tasks.schemas import PlainText, TurnRequest

router = APIRouter(prefix="/v1/articles", tags=["articles"])


class DraftRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    questions: list[PlainText] = Field(min_length=1, max_length=50)


class DraftProposal(BaseModel):
    title: str
    slug: str
    text: str
    sources: list[dict[str, Any]]
    questions: list[str]


async def _run(call: Any, *args: Any) -> Any:
    try:
        return await run_in_threadpool(call, *args)
    except ArticleError as exc:
        raise ApiError(exc.status, "invalid_article", str(exc), {"field": exc.field}) from None


@router.post("/draft", response_model=DraftProposal)
async def draft_article(body: DraftRequest, who: Admin, pilot: Pilot) -> DraftProposal:
    """A draft from the replies people wrote to these questions, each sentence's source."""
    proposal = await run_in_threadpool(draft, pilot.runtime.memory, who.tenant, body.questions)
    return DraftProposal(**proposal)


@router.post("", response_model=ArticleRecord, status_code=201)
async def save_article(body: ArticleDraft, who: Admin, pilot: Pilot) -> ArticleRecord:
    """Write the article and ingest it as internal (customers cannot see it yet)."""
    kb = pilot.runtime.knowledge_base()
    record = await _run(pilot.articles.save, who.tenant, who.key_name, dict(who.slots), body, kb)
    return ArticleRecord(**record)


def check_slots(who: Caller, record: dict[str, Any]) -> dict[str, str]:
    """Staff slots that can read the draft: internal, its first tier, the key's tenant."""
    slots = {"access_level": "internal"}
    if record.get("tiers"):
        slots["tier"] = record["tiers"][0]
    if who.tenant:
        slots["tenant"] = who.tenant
    return slots


def run_check(pilot: PilotContext, who: Caller, slug: str) -> dict[str, Any]:
    record = pilot.articles.record(who.tenant, slug) or {}
    slots = check_slots(who, record)

    def ask(question: str) -> Any:
        return run_turn(
            TurnRequest(session_id=f"check-{slug}", message=question, slots=slots), pilot.runtime
        )

    return pilot.articles.check(who.tenant, who.key_name, slug, ask)


@router.post("/{slug}/check", response_model=ArticleRecord)
async def check_article(slug: str, who: Admin, pilot: Pilot) -> ArticleRecord:
    """Replay the article's questions against the knowledge base with the draft in it."""
    return ArticleRecord(**await _run(run_check, pilot, who, slug))


@router.post("/{slug}/publish", response_model=ArticleRecord)
async def publish_article(slug: str, who: Admin, pilot: Pilot) -> ArticleRecord:
    """Give the article its access level (409 before a check answered from it)."""
    kb = pilot.runtime.knowledge_base()
    return ArticleRecord(**await _run(pilot.articles.publish, who.tenant, who.key_name, slug, kb))


@router.get("", response_model=list[ArticleRecord])
async def articles(who: Admin, pilot: Pilot) -> list[ArticleRecord]:
    """The tenant's articles, the latest changed first, with their history."""
    return [ArticleRecord(**r) for r in await run_in_threadpool(pilot.articles.all, who.tenant)]
