"""The embeddable widget's token policy: a publishable widget key opens a session and gets a
short-lived token for it; a signed customer token from the team's site names the visitor
(spent once, refused for a key without a secret); only a session's own token renews it, and
a renewal counts as a read. The widget's routes (``service/routes/widget.py``) parse,
authorize, call one of these and answer.

Usage::

    opened = open_widget_session(pilot, who, customer_token=None)   # anonymous visitor
    renewed = renew_token(pilot, who, opened.session_id)            # who: the session's token
"""

from __future__ import annotations

import time

from service.auth import Caller
from service.context import PilotContext, owned_session
from service.domain.conversation import open_session
from service.domain.views import RenewedToken, WidgetSession
from service.errors import ApiError
from service.widget_tokens import TokenError, read_customer_token, secret_from_environment, widget_key
from storage.memory import ANONYMOUS, ScopeError, check_id


def open_widget_session(pilot: PilotContext, who: Caller, customer_token: str | None) -> WidgetSession:
    """A new session of the widget key's, named after the visitor the site vouched for (else
    anonymous), and its token."""
    now = time.time()
    customer = None
    if customer_token is not None:
        customer = vouched_customer(pilot, who, customer_token, now)
    header = open_session(pilot, who, customer, {})
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


def renew_token(pilot: PilotContext, who: Caller, session_id: str) -> RenewedToken:
    """The session's token with a new expiry: only the session's own token renews it (403),
    counted as a read (so tokens cannot be minted unbounded), 404 for any other session."""
    if who.session_id is None:
        raise ApiError(403, "session_token", "only a widget session's own token renews it")
    pilot.limits.spend("reads", who)
    owned_session(pilot, who, session_id)
    assert pilot.session_tokens is not None  # a session token was read, so tokens exist
    token, expires = pilot.session_tokens.issue(who.tenant, who.key_name, session_id, time.time())
    return RenewedToken(session_id=session_id, token=token, expires_at=expires)
