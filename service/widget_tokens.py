"""The embeddable widget's tokens, both HS256 JSON Web Tokens (PyJWT):

- a **customer token**, signed by the team's own site with a secret it keeps (given to the
  service through the environment variable a widget key's ``identity_secret_env`` names): the
  only way a widget visitor is named. Claims ``sub`` (the customer id), ``iat``, ``exp`` (at
  most ``pilot.customer_token_max_age_s`` ahead) and ``jti`` (spent once per tenant: a replay
  is refused on every widget key of the tenant, which may share one signing secret);
- a **session token**, signed by the service with ``SUPPORTCREW_SESSION_SECRET``: what the
  widget holds instead of a key, good for one session until it expires.

Usage::

    tokens = SessionTokens.from_environment(settings.pilot)   # None when no widget key
    token, expires = tokens.issue(tenant="acme", key_name="site", session_id=sid, now=now)
    claims = tokens.read(token)                                # TokenError when not good
    customer = read_customer_token(raw, secret, max_age_s=600, now=now)
    spent.spend(tenant, customer.token_id, customer.expires_at)  # False: a replay
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass

import jwt

from config.settings import ApiKey, ConfigError, PilotSettings
from service.domain.records import JsonObject
from storage.kb.embeddings import Encoders
from storage.qdrant.store import Match, PointData, Store, ensure_records

SESSION_SECRET_ENV = "SUPPORTCREW_SESSION_SECRET"
MIN_SECRET_CHARS = 32
SESSION_AUDIENCE = "supportcrew-session"
LEEWAY_S = 5  # clocks of the team's servers and ours may differ this much
SPENT = "pilot_spent_tokens"
_NAMESPACE = uuid.UUID("0b6c2f7e-41d9-4a3e-9f58-7d2c6e1a9b30")


class TokenError(Exception):
    """A token that is forged, expired, malformed or already used (the service answers 403)."""


def secret_from_environment(name: str, what: str) -> str:
    """The secret in environment variable ``name``; :class:`ConfigError` naming it when it is
    missing or too short to be one."""
    value = os.environ.get(name, "")
    if len(value) < MIN_SECRET_CHARS:
        raise ConfigError(
            f"{what}: set the environment variable {name} to a secret of at least "
            f"{MIN_SECRET_CHARS} characters (e.g. python -c 'import secrets; "
            "print(secrets.token_urlsafe(32))')"
        )
    return value


@dataclass(frozen=True)
class SessionClaims:
    session_id: str
    tenant: str
    key_name: str
    expires_at: float


class SessionTokens:
    """Issues and reads widget session tokens."""

    def __init__(self, secret: str, minutes: float) -> None:
        self.secret = secret
        self.seconds = minutes * 60

    @classmethod
    def from_environment(cls, pilot: PilotSettings) -> SessionTokens | None:
        """None when no key is a widget's; else the tokens signed with the environment's
        secret (:class:`ConfigError` at start when it is not set: every worker must share it)."""
        widgets = [k for k in pilot.api_keys if k.role == "widget"]
        if not widgets:
            return None
        for key in widgets:
            if key.identity_secret_env:
                secret_from_environment(key.identity_secret_env, f"widget key {key.name!r}")
        secret = secret_from_environment(SESSION_SECRET_ENV, "widget keys are configured")
        return cls(secret, pilot.session_token_minutes)

    def issue(self, tenant: str, key_name: str, session_id: str, now: float) -> tuple[str, float]:
        expires = now + self.seconds
        claims = {
            "sid": session_id,
            "tenant": tenant,
            "key": key_name,
            "aud": SESSION_AUDIENCE,
            "iat": int(now),
            "exp": int(expires),
        }
        return jwt.encode(claims, self.secret, algorithm="HS256"), float(int(expires))

    def read(self, token: str) -> SessionClaims:
        claims = _decode(token, self.secret, audience=SESSION_AUDIENCE, required=("sid", "exp"))
        sid, tenant, key = (claims.get(k) for k in ("sid", "tenant", "key"))
        if not (isinstance(sid, str) and isinstance(tenant, str) and isinstance(key, str)):
            raise TokenError("the session token is malformed")
        return SessionClaims(sid, tenant, key, _seconds(claims, "exp"))


@dataclass(frozen=True)
class CustomerToken:
    customer_id: str
    token_id: str
    expires_at: float


def read_customer_token(token: str, secret: str, max_age_s: float, now: float) -> CustomerToken:
    """The customer a team's site vouches for; :class:`TokenError` saying why otherwise."""
    claims = _decode(token, secret, audience=None, required=("sub", "iat", "exp", "jti"))
    customer, token_id = claims["sub"], claims["jti"]
    if not isinstance(customer, str) or not isinstance(token_id, str) or not token_id:
        raise TokenError("the customer token's sub and jti must be strings")
    expires = _seconds(claims, "exp")
    if expires > now + max_age_s + LEEWAY_S:
        raise TokenError(
            f"the customer token expires more than {max_age_s:g} s from now: sign short-lived ones"
        )
    return CustomerToken(customer, token_id[:200], expires)


def _seconds(claims: JsonObject, name: str) -> float:
    """A time claim (PyJWT checked it is a number when it verified the token)."""
    value = claims[name]
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise TokenError(f"the token's {name} is not a number")
    return float(value)


def _decode(token: str, secret: str, audience: str | None, required: tuple[str, ...]) -> JsonObject:
    try:
        return jwt.decode(
            token,
            secret,
            algorithms=["HS256"],  # never "none", never a key the token names
            audience=audience,
            leeway=LEEWAY_S,
            options={"require": list(required), "verify_aud": audience is not None},
        )
    except jwt.ExpiredSignatureError:
        raise TokenError("the token has expired") from None
    except jwt.InvalidSignatureError:
        raise TokenError("the token's signature does not match") from None
    except jwt.PyJWTError as exc:
        raise TokenError(f"the token is not valid: {exc}") from None


def widget_key(keys: list[ApiKey], tenant: str, name: str) -> ApiKey | None:
    """The widget key a session token names, as configured now (a removed key ends its tokens)."""
    return next((k for k in keys if k.role == "widget" and k.tenant == tenant and k.name == name), None)


class SpentTokens:
    """Customer token ids already used, shared by every worker (a Qdrant collection): a token
    opens one session. Each record is kept until its token has expired anyway."""

    def __init__(self, store: Store, encoders: Encoders) -> None:
        self.store = store
        self.vector = encoders.dense.encode(["spent token"])[0].dense
        ensure_records(store, SPENT, encoders.dense.dim, ("key", "hour"))

    def spend(
        self, tenant: str, token_id: str, expires_at: float, key_names: tuple[str, ...] = ()
    ) -> bool:
        """True the first time this token id is spent in the tenant, False for a replay (on
        any of its widget keys). ``key_names``: the tenant's widget keys, whose records of the
        layout before (one per key) still count."""
        key = json.dumps([tenant, token_id])
        legacy = tuple(f"{tenant}/{name}/{token_id}" for name in key_names)
        if legacy and any(True for _ in self.store.scroll(SPENT, Match("key", legacy), fields=("key",))):
            return False
        mine = uuid.uuid4().hex
        point = PointData(
            id=str(uuid.uuid5(_NAMESPACE, key)),
            dense=self.vector,
            payload={"key": key, "claim": mine, "hour": str(int(expires_at // 3600))},
        )
        self.store.insert_new(SPENT, [point])  # an existing id stays: the first spender wins
        found = list(self.store.scroll(SPENT, Match("key", (key,))))
        return bool(found) and found[0].payload.get("claim") == mine

    def forget_expired(self, now: float | None = None, hours_back: int = 48) -> None:
        """Drop the records of tokens that expired in the last ``hours_back`` hours."""
        hour = int((time.time() if now is None else now) // 3600)
        gone = tuple(str(h) for h in range(hour - hours_back, hour))
        self.store.delete(SPENT, Match("hour", gone))
