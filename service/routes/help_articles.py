"""``GET /help/articles/...``: a published desk article, where its citations open
(``service.stores.articles.article_url``). Read like a search: with any key that holds conversations
or works the desk (a widget's session token too), within the key's tenant and under its
enforced slots, decided in the store; an article of another tenant, a draft or one above the
key's slots is 404, never its text. Without a key (a citation link opened in a browser) the
reader is a visitor of the help center of the tenant the path names, with no slots: only what
the store shows to nobody in particular (public access, no tier, no customer) opens. Served as
plain text (its Markdown), or to a browser that asks for HTML as a page rendered from it
(``service.web.article_page``: raw HTML in the Markdown is shown as text, the page runs no script
and loads nothing); counted against the key's ``searches``, or a keyless visitor's ``reads``
per address. A keyless path naming a tenant no configured key serves is 404 before anything
is counted: one address makes at most one ``reads`` counter per served tenant, and it
expires with its window (``service.stores.rate_limits``).

Usage::

    client.get("/help/articles/acme/mars-shipping", headers={"Authorization": "Bearer KEY"})
    client.get("/help/articles/acme/mars-shipping")     # a public article, from a citation link
"""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, PlainTextResponse

from config.settings import ApiKey
from service.auth import Caller
from service.context import Pilot, caller, require_role
from service.domain.staff_reads import staff_slots
from service.errors import ApiError
from service.stores.articles import tenant_folder
from service.web.article_page import PAGE_HEADERS, article_page, wants_html

router = APIRouter(tags=["articles"])


def help_center_visitor(name: str, address: str | None, keys: Sequence[ApiKey]) -> Caller | None:
    """A reader without a key: a visitor of the tenant the path names (``acme/...``, its
    folder: ``service.stores.articles.tenant_folder``), no slots, counted per client address like a
    widget's visitor; None when no configured key serves that tenant (nothing to read, and
    nothing is counted: a made-up name never becomes a counter).

    >>> from config.settings import ApiKey
    >>> keys = [ApiKey(name="lead", sha256="0" * 64, tenant="acme", role="admin")]
    >>> help_center_visitor("acme/mars-shipping", "203.0.113.9", keys).tenant
    'acme'
    >>> help_center_visitor("made-up/mars-shipping", "203.0.113.9", keys) is None
    True
    """
    folder = name.split("/", 1)[0] if "/" in name else ""
    tenants = {tenant_folder(k.tenant) if k.tenant else "": k.tenant for k in keys}
    if folder not in tenants:
        return None
    return Caller("help-center", tenants[folder], role="customer", publishable=True, address=address)


# plain text that no browser sniffs into a page, runs nothing and is never framed
TEXT_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'; sandbox",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Vary": "Accept",  # a browser asking for HTML gets the page (``article_page``)
}


@router.get(
    "/help/articles/{name:path}",
    response_class=Response,
    responses={
        200: {
            "content": {
                "text/plain": {"schema": {"type": "string"}},
                "text/html": {"schema": {"type": "string"}},
            },
            "description": "the article's Markdown; a page rendered from it for a browser",
        }
    },
)
async def help_article(name: str, request: Request, pilot: Pilot) -> Response:
    """A published article of the reader's tenant that its enforced slots may read (404 else)."""
    if "authorization" in request.headers:
        who = await caller(request, pilot)
        require_role(who, "customer", "agent", "admin")
        await run_in_threadpool(pilot.limits.spend, "searches", who)
    else:
        address = request.client.host if request.client else None
        visitor = help_center_visitor(name, address, pilot.settings.pilot.api_keys)
        if visitor is None:  # refused before anything is counted or read
            raise ApiError(404, "unknown_article", f"no published article {name!r} this key may read")
        who = visitor
        await run_in_threadpool(pilot.limits.spend, "reads", who)
    kb = pilot.runtime.knowledge_base()
    record = await run_in_threadpool(pilot.articles.readable, who.tenant, staff_slots(who), name, kb)
    if record is None:
        raise ApiError(404, "unknown_article", f"no published article {name!r} this key may read")
    if wants_html(request.headers.get("accept", "")):
        return HTMLResponse(article_page(record["title"], record["text"]), headers=PAGE_HEADERS)
    return PlainTextResponse(record["text"], headers=TEXT_HEADERS)
