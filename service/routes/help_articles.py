"""``GET /help/articles/...``: a published desk article, where its citations open
(``service.articles.article_url``). Read like a search: with any key that holds conversations
or works the desk (a widget's session token too), within the key's tenant and under its
enforced slots, decided in the store; an article of another tenant, a draft or one above the
key's slots is 404, never its text. Served as plain text (its Markdown: nothing in it is
markup a browser runs), counted against the key's ``searches``.

Usage::

    client.get("/help/articles/acme/mars-shipping", headers={"Authorization": "Bearer KEY"})
"""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import PlainTextResponse

from service.context import Authed, Pilot, require_role
from service.errors import ApiError
from service.staff_reads import staff_slots

router = APIRouter(tags=["articles"])
# plain text that no browser sniffs into a page, runs nothing and is never framed
TEXT_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'; sandbox",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


@router.get(
    "/help/articles/{name:path}",
    response_class=Response,
    responses={
        200: {
            "content": {"text/plain": {"schema": {"type": "string"}}},
            "description": "the article's Markdown",
        }
    },
)
async def help_article(name: str, who: Authed, pilot: Pilot) -> Response:
    """A published article of the key's tenant that its enforced slots may read (404 else)."""
    require_role(who, "customer", "agent", "admin")
    await run_in_threadpool(pilot.limits.spend, "searches", who)
    kb = pilot.runtime.knowledge_base()
    record = await run_in_threadpool(pilot.articles.readable, who.tenant, staff_slots(who), name, kb)
    if record is None:
        raise ApiError(404, "unknown_article", f"no published article {name!r} this key may read")
    return PlainTextResponse(record["text"], headers=TEXT_HEADERS)
