"""API keys of the pilot: SHA-256 at rest, each mapped to a tenant and enforced slots.

Accepted as ``Authorization: Bearer KEY``, ``X-API-Key: KEY`` or HTTP Basic with the key as
password (the watsonx custom-service integration offers basic auth or an API key).

Usage::

    hash_key("sk-live-123")                      # what goes into config: pilot.api_keys[].sha256
    caller = authenticate(request.headers, settings.pilot.api_keys)
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from config.settings import ApiKey


class AuthError(Exception):
    """401: no usable credentials, or a key nobody issued."""


@dataclass(frozen=True)
class Caller:
    key_name: str
    tenant: str
    slots: dict[str, str] = field(default_factory=dict)
    trust_customer_id: bool = False
    role: str = "customer"


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


def authenticate(headers: Mapping[str, str], keys: Sequence[ApiKey]) -> Caller:
    key = presented_key(headers)
    if not key:
        raise AuthError("missing API key: send Authorization: Bearer <key> or X-API-Key")
    digest = hash_key(key)
    for issued in keys:
        if hmac.compare_digest(digest, issued.sha256):
            return Caller(
                issued.name, issued.tenant, dict(issued.slots), issued.trust_customer_id, issued.role
            )
    raise AuthError("unknown API key")
