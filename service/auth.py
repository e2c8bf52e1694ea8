"""API keys of the pilot: SHA-256 at rest, each mapped to a tenant and enforced slots.

Accepted as ``Authorization: Bearer KEY``, ``X-API-Key: KEY`` or HTTP Basic with the key as
password (the watsonx custom-service integration offers basic auth or an API key). A widget's
session token (:mod:`service.widget_tokens`) is presented the same way and acts as its widget
key, for its one session only.

A browser says where a request comes from (``Origin``): a key is refused (403) from any origin
but the service's own and those configured for it, so a secret key pasted into a team's page
fails at once, and a widget key works only on the sites that embed it.

Usage::

    hash_key("sk-live-123")                      # what goes into config: pilot.api_keys[].sha256
    caller = authenticate(request.headers, settings.pilot.api_keys, session_tokens)
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from config.settings import ApiKey, ConfigError, SlotRule
from service.errors import ApiError
from service.widget_tokens import SessionTokens, TokenError, widget_key
from storage.retrieval.filters import SlotError, build_filters


class AuthError(Exception):
    """401: no usable credentials, or a key nobody issued."""


@dataclass(frozen=True)
class Caller:
    key_name: str
    tenant: str
    slots: dict[str, str] = field(default_factory=dict)
    trust_customer_id: bool = False
    role: str = "customer"
    origins: tuple[str, ...] = ()
    session_id: str | None = None  # a widget session token: this session and no other
    publishable: bool = False  # a widget key or its session token: each visitor has limits
    address: str | None = None  # the client's address (a trusted proxy's forwarded one)


def caller_of(key: ApiKey, session_id: str | None = None) -> Caller:
    # a widget's session token holds a conversation like a customer key, for one session
    role = "customer" if session_id else key.role
    return Caller(
        key.name,
        key.tenant,
        dict(key.slots),
        key.trust_customer_id,
        role,
        tuple(key.origins),
        session_id,
        key.role == "widget",
    )


def check_key_slots(keys: Sequence[ApiKey], rules: Mapping[str, SlotRule]) -> None:
    """At start: every key's slots are known slots with values the rules accept (those the
    configuration lists and those the knowledge base's pages name); a
    :class:`config.settings.ConfigError` naming the key otherwise, so a key that would fail
    every request stops the start instead.

    >>> from config.settings import load_settings
    >>> key = ApiKey(name="web", sha256="0" * 64, tenant="acme", slots={"tier": "platinum"})
    >>> check_key_slots([key], load_settings().slots)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    config.settings.ConfigError: pilot.api_keys: key 'web' of tenant 'acme': slot tier: 'platinum' ...
    """
    for key in keys:
        try:
            build_filters(rules, key.slots)
        except SlotError as exc:
            raise ConfigError(
                f"pilot.api_keys: key {key.name!r} of tenant {key.tenant!r}: {exc}"
            ) from None


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def presented_key(headers: Mapping[str, str]) -> str | None:
    authorization = headers.get("authorization", "")
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    if scheme.lower() == "basic" and value.strip():
        try:
            decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
        return decoded.partition(":")[2] or None
    return headers.get("x-api-key") or None


def authenticate(
    headers: Mapping[str, str], keys: Sequence[ApiKey], sessions: SessionTokens | None = None
) -> Caller:
    """The caller of an API key or a widget session token; :class:`AuthError` (401) without
    one, an :class:`ApiError` (403) from an origin the key is not for."""
    key = presented_key(headers)
    if not key:
        raise AuthError("missing API key: send Authorization: Bearer <key> or X-API-Key")
    who = _issued(key, keys) or (_session(key, keys, sessions) if sessions else None)
    if who is None:
        raise AuthError("unknown API key")
    check_origin(headers, who)
    return who


def _issued(key: str, keys: Sequence[ApiKey]) -> Caller | None:
    digest = hash_key(key)
    for issued in keys:
        if hmac.compare_digest(digest, issued.sha256):
            return caller_of(issued)
    return None


def _session(token: str, keys: Sequence[ApiKey], sessions: SessionTokens) -> Caller | None:
    if token.count(".") != 2:
        return None
    try:
        claims = sessions.read(token)
    except TokenError as exc:
        raise AuthError(f"session token refused: {exc}") from None
    key = widget_key(list(keys), claims.tenant, claims.key_name)
    if key is None:
        raise AuthError("session token refused: its widget key is no longer configured")
    return caller_of(key, claims.session_id)


def same_origin(origin: str, host: str) -> bool:
    """Whether a browser's ``Origin`` is the service's own (its ``Host``, behind a proxy too).

    >>> same_origin("https://support.example.com", "support.example.com")
    True
    >>> same_origin("http://127.0.0.1:8000", "127.0.0.1:8001")
    False
    """
    return bool(host) and origin.partition("://")[2].lower() == host.lower()


def check_origin(headers: Mapping[str, str], who: Caller) -> None:
    """403 for a browser request from an origin the key is not configured for."""
    origin = headers.get("origin")
    if origin is None or origin in who.origins or same_origin(origin, headers.get("host", "")):
        return
    raise ApiError(
        403,
        "origin_not_allowed",
        f"this key is not for pages on {origin[:200]}: "
        + (
            "add the origin to the key's origins"
            if who.origins
            else "a secret key never belongs in a web page; use a widget key (role widget)"
        ),
    )
