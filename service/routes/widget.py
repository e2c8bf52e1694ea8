"""The embeddable widget's routes: a publishable widget key opens a session and gets a
short-lived token for it (``service/widget_tokens.py``); everything after goes through
``/v1/sessions/{id}`` with that token. Before it shows its launcher the widget asks whether
its key may be used on the page's origin (``GET /v1/widget/ready``): on a site the key is
not for, no launcher shows (and the browser console says why). A signed customer token from
the team's site names the visitor; without one the visitor is anonymous.

A session's token renews itself before it expires (``POST /v1/widget/sessions/{id}/token``
with that token): the widget keeps one conversation's token across reloads, never the key's
reach beyond it.

Usage (what widget.js sends; the customer token is optional)::

    opened = client.post(
        "/v1/widget/sessions",
        json={"customer_token": signed_by_the_site},
        headers={"Authorization": "Bearer pk_live_acme", "Origin": "https://help.acme.com"},
    )  # 201 {"session_id", "customer_id", "token", "expires_at"}
"""

from __future__ import annotations

import time

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from service.auth import Caller
from service.context import Customer, Pilot, PilotContext, Widget, owned_session
from service.domain.conversation import open_session
from service.errors import ApiError
from service.widget_tokens import TokenError, read_customer_token, secret_from_environment, widget_key
from storage.memory import ANONYMOUS, ScopeError, check_id

router = APIRouter(prefix="/v1/widget", tags=["widget"])


class NewWidgetSession(BaseModel):
    model_config = ConfigDict(extra="forbid")
    customer_token: str | None = Field(default=None, min_length=1, max_length=4000)


class WidgetSession(BaseModel):
    session_id: str
    customer_id: str
    token: str
    expires_at: float


class WidgetReady(BaseModel):
    ready: bool


class RenewedToken(BaseModel):
    session_id: str
    token: str
    expires_at: float


@router.get("/ready", response_model=WidgetReady)
async def widget_ready(_who: Widget) -> WidgetReady:
    """Whether this widget key may start a chat on the page asking: 200 from one of the key's
    origins; 403 ``origin_not_allowed`` from another (where no key lists that origin the
    browser gets no CORS grant at all). Opens no session, stores and counts nothing: the
    widget asks it on every page view before it shows its launcher."""
    return WidgetReady(ready=True)


@router.post("/sessions", status_code=201, response_model=WidgetSession)
async def new_widget_session(body: NewWidgetSession, who: Widget, pilot: Pilot) -> WidgetSession:
    now = time.time()
    customer = None
    if body.customer_token is not None:
        customer = await run_in_threadpool(vouched_customer, pilot, who, body.customer_token, now)
    header = await run_in_threadpool(open_session, pilot, who, customer, {})
    assert pilot.session_tokens is not None  # a widget key exists, so its tokens do
    token, expires = pilot.session_tokens.issue(who.tenant, who.key_name, header["session_id"], now)
    return WidgetSession(
        session_id=header["session_id"],
        customer_id=header["customer_id"],
        token=token,
        expires_at=expires,
    )


def vouched_customer(pilot: PilotContext, who: Caller, token: str, now: float) -> str:
    """The customer id the team's site signed, spent once; 403 naming what is wrong."""
    key = widget_key(pilot.settings.pilot.api_keys, who.tenant, who.key_name)
    if key is None or not key.identity_secret_env:
        raise ApiError(
            403,
            "customer_token_refused",
            "this widget key takes no customer tokens: set identity_secret_env for it",
        )
    secret = secret_from_environment(key.identity_secret_env, f"widget key {key.name!r}")
    try:
        vouched = read_customer_token(token, secret, pilot.settings.pilot.customer_token_max_age_s, now)
        check_id("customer_id", vouched.customer_id)
    except (TokenError, ScopeError) as exc:
        raise ApiError(403, "customer_token_refused", f"customer token refused: {exc}") from None
    if vouched.customer_id.startswith(ANONYMOUS):
        raise ApiError(403, "customer_token_refused", "customer token refused: anonymous ids are ours")
    assert pilot.spent_tokens is not None  # built with the widget keys' session tokens
    widgets = tuple(
        k.name for k in pilot.settings.pilot.api_keys if k.role == "widget" and k.tenant == who.tenant
    )
    if not pilot.spent_tokens.spend(who.tenant, vouched.token_id, vouched.expires_at, widgets):
        raise ApiError(
            403, "customer_token_refused", "customer token refused: it has already opened a session"
        )
    return vouched.customer_id


@router.post("/sessions/{session_id}/token", response_model=RenewedToken)
async def renew_token(session_id: str, who: Customer, pilot: Pilot) -> RenewedToken:
    """A widget session's token, renewed before it expires: the same session (and no other),
    a new expiry. Only the session's own token renews it; a widget keeps it for that one
    conversation (so a reload resumes it)."""
    if who.session_id is None:
        raise ApiError(403, "session_token", "only a widget session's own token renews it")
    # a renewal is a read of the visitor's session: counted, so tokens cannot be minted unbounded
    await run_in_threadpool(pilot.limits.spend, "reads", who)
    await run_in_threadpool(owned_session, pilot, who, session_id)  # 404 for any other session
    assert pilot.session_tokens is not None  # a session token was read, so tokens exist
    token, expires = pilot.session_tokens.issue(who.tenant, who.key_name, session_id, time.time())
    return RenewedToken(session_id=session_id, token=token, expires_at=expires)
