"""A JSON answer a client may poll cheaply: its body's hash is its ETag, and a request whose
``If-None-Match`` names it gets 304 with no body.

Usage::

    return json_with_etag(page, request.headers.get("if-none-match", ""))
"""

from __future__ import annotations

import hashlib
import json

from fastapi import Response
from pydantic import BaseModel


def etag_matches(if_none_match: str, etag: str) -> bool:
    """Whether an ``If-None-Match`` header names ``etag``: a list, weak tags (``W/"..."``,
    compared weakly as RFC 9110 asks for this header) and ``*`` count.

    >>> etag_matches('"a", W/"b"', '"b"'), etag_matches("*", '"b"'), etag_matches('"a"', '"b"')
    (True, True, False)
    """
    tags = {t.strip().removeprefix("W/") for t in if_none_match.split(",")}
    return "*" in tags or etag in tags


def json_with_etag(body: BaseModel, if_none_match: str) -> Response:
    """``body`` as JSON (keys sorted, so the same body has the same tag) with its ETag, or 304
    when ``if_none_match`` names that tag."""
    text = json.dumps(body.model_dump(mode="json"), sort_keys=True).encode()
    etag = '"' + hashlib.sha256(text).hexdigest()[:32] + '"'
    if etag_matches(if_none_match, etag):
        return Response(status_code=304, headers={"ETag": etag})
    return Response(text, media_type="application/json", headers={"ETag": etag})
