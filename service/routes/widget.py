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

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from service.context import Customer, Pilot, Widget
from service.domain import widget as domain
from service.domain.views import RenewedToken, WidgetReady, WidgetSession

router = APIRouter(prefix="/v1/widget", tags=["widget"])


class NewWidgetSession(BaseModel):
    model_config = ConfigDict(extra="forbid")
    customer_token: str | None = Field(default=None, min_length=1, max_length=4000)


@router.get("/ready", response_model=WidgetReady)
async def widget_ready(_who: Widget) -> WidgetReady:
    """Whether this widget key may start a chat on the page asking: 200 from one of the key's
    origins; 403 ``origin_not_allowed`` from another (where no key lists that origin the
    browser gets no CORS grant at all). Opens no session, stores and counts nothing: the
    widget asks it on every page view before it shows its launcher."""
    return WidgetReady(ready=True)


@router.post("/sessions", status_code=201, response_model=WidgetSession)
async def new_widget_session(body: NewWidgetSession, who: Widget, pilot: Pilot) -> WidgetSession:
    return await run_in_threadpool(domain.open_widget_session, pilot, who, body.customer_token)


@router.post("/sessions/{session_id}/token", response_model=RenewedToken)
async def renew_token(session_id: str, who: Customer, pilot: Pilot) -> RenewedToken:
    """A widget session's token, renewed before it expires: the same session (and no other),
    a new expiry. Only the session's own token renews it; a widget keeps it for that one
    conversation (so a reload resumes it)."""
    return await run_in_threadpool(domain.renew_token, pilot, who, session_id)
