"""What every route of the pilot depends on: the app's context, the caller, the session.

Usage (in a route)::

    @router.get("/v1/sessions/{session_id}")
    async def get_session(session_id: str, who: Authed, pilot: Pilot) -> dict: ...
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Annotated

from fastapi import Depends, Query, Request

from agents.runtime import TurnRuntime
from config.settings import Settings
from service.auth import AuthError, Caller, authenticate
from service.domain.gaps import ReportCache
from service.domain.outcomes import ConversationFilter
from service.domain.records import SessionHeader
from service.domain.session_state import Role
from service.errors import ApiError
from service.stores.articles import Articles
from service.stores.outcome_store import OutcomeStore
from service.stores.pilot_store import PilotStore
from service.stores.rate_limits import RateLimits
from service.stores.upkeep_marks import UpkeepMarks
from service.tracing import TurnTracer
from service.widget_tokens import SessionTokens, SpentTokens
from storage.memory import MemoryStore
from tasks.gap_report import GapReport
from tasks.outcomes import Label


@dataclass
class PilotContext:
    """The running service: settings, the turn runtime, the pilot store, per-session locks and
    the turns running now. The stores are built when the service starts (its lifespan), from
    the runtime's knowledge base; a route never runs before that."""

    settings: Settings
    runtime: TurnRuntime = field(default=None)  # type: ignore[assignment]  # built at start
    store: PilotStore = field(init=False)
    limits: RateLimits = field(init=False)
    articles: Articles = field(init=False)
    outcomes: OutcomeStore = field(init=False)
    upkeep: UpkeepMarks = field(init=False)
    run: str = ""  # this run's upkeep mark (``UpkeepMarks.begin_run``)
    others_left: bool = False  # a run that did not stop cleanly had left its mark
    caught_up: bool = False  # the start's catch-up finished (nothing left unlabelled)
    gap_reports: ReportCache[GapReport] = field(default_factory=ReportCache)
    session_tokens: SessionTokens | None = None  # widget sessions' tokens (widget keys only)
    spent_tokens: SpentTokens | None = None  # customer tokens used (widget keys only)
    tracer: TurnTracer | None = None  # when spans go somewhere

    @property
    def memory(self) -> MemoryStore:
        """The customers' memory, where the pilot keeps every session's turns."""
        if self.runtime.memory is None:
            raise RuntimeError("the pilot needs the customer memory (the runtime was built without)")
        return self.runtime.memory

    dirty: set[tuple[str, str]] = field(default_factory=set)  # (tenant, session) to relabel
    locks: defaultdict[str, asyncio.Lock] = field(default_factory=lambda: defaultdict(asyncio.Lock))
    running: set[asyncio.Task[object]] = field(default_factory=set)


# The dependencies are ``async``: none of them blocks (a key's hash, a token's signature), and
# FastAPI runs a plain ``def`` dependency in its thread pool, one hop per dependency per
# request (three for every customer route: ~2 ms of /v1/search's 6 under the pilot's load)
async def pilot_context(request: Request) -> PilotContext:
    return request.app.state.pilot


Pilot = Annotated[PilotContext, Depends(pilot_context)]


async def caller(request: Request, pilot: Pilot) -> Caller:
    """The API key's caller (tenant, enforced slots, trust, client address); 401 without a
    valid key."""
    try:
        who = authenticate(request.headers, pilot.settings.pilot.api_keys, pilot.session_tokens)
    except AuthError as exc:
        raise ApiError(401, "unauthorized", str(exc)) from None
    return replace(who, address=request.client.host if request.client else None)


Authed = Annotated[Caller, Depends(caller)]


def require_role(who: Caller, *roles: str) -> None:
    """403 unless the key's role is one of ``roles``."""
    if who.role not in roles:
        raise ApiError(
            403,
            "wrong_role",
            f"this route needs a key with role {' or '.join(roles)}; this key's role is {who.role}",
        )


async def customer_caller(who: Authed) -> Caller:
    """A key that holds conversations (role ``customer``)."""
    require_role(who, "customer")
    return who


async def staff_caller(who: Authed) -> Caller:
    """A support person's key (role ``agent`` or ``admin``)."""
    require_role(who, "agent", "admin")
    return who


async def admin_caller(who: Authed) -> Caller:
    require_role(who, "admin")
    return who


async def widget_caller(who: Authed) -> Caller:
    """A publishable widget key (it opens sessions and nothing else)."""
    require_role(who, "widget")
    return who


Customer = Annotated[Caller, Depends(customer_caller)]
Widget = Annotated[Caller, Depends(widget_caller)]
Staff = Annotated[Caller, Depends(staff_caller)]
Admin = Annotated[Caller, Depends(admin_caller)]


def staff_role(who: Caller) -> Role:
    """The session role of a staff key (the ``Staff`` dependency admitted only these two)."""
    return "admin" if who.role == "admin" else "agent"


def found(header: SessionHeader | None, session_id: str) -> SessionHeader:
    """The header a store call found in the caller's tenant, or 404 (store writes return
    None for a session they do not find: no read before them is needed)."""
    if header is None:
        raise ApiError(404, "unknown_session", f"no session {session_id!r} in this tenant")
    return header


def owner_of(who: Caller) -> str:
    """Who a session belongs to: keys with the same tenant, enforced slots and trust."""
    return hashlib.sha256(
        json.dumps([who.tenant, sorted(who.slots.items()), who.trust_customer_id]).encode()
    ).hexdigest()


def owned_session(pilot: PilotContext, who: Caller, session_id: str) -> SessionHeader:
    """The session's header, or 404 when it is not this caller's (a widget session token's
    caller owns its one session)."""
    if who.session_id is not None and who.session_id != session_id:
        raise ApiError(404, "unknown_session", f"no session {session_id!r} for this key")
    header = pilot.store.session(who.tenant, session_id)
    owner = header and (header.get("owner") or header.get("key"))
    if header is None or owner not in (owner_of(who), who.key_name):
        raise ApiError(404, "unknown_session", f"no session {session_id!r} for this key")
    return header


async def drill_down(
    label: Label | None = None,
    topic: str | None = Query(None, max_length=500, description="the page it is about"),
    day: str | None = Query(None, pattern=r"^\d{4}-\d{2}-\d{2}$", description="UTC, ISO"),
    article: str | None = Query(None, max_length=500, description="a page its answers cited"),
    other: bool = Query(False, description="about no page the key may read (the topics report's other)"),
) -> ConversationFilter:
    """The report's filters, from the query: which conversations a lead drills down to."""
    return ConversationFilter(label=label, topic=topic, day=day, article=article, other=other)


Wanted = Annotated[ConversationFilter, Depends(drill_down)]
