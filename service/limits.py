"""Request limits applied before a route reads anything: an ASGI middleware.

``/v1/`` requests are authenticated from their headers first (401 before any body byte is
read; ``check_key`` may also refuse a key, or a visitor of a widget key (by its client
address), whose rate limit for the path is spent: 429). Then
the body is capped: a ``Content-Length`` over the limit is refused at once, and a body
without one (chunked) is counted as it arrives and refused at ``limit + 1`` bytes, so a huge
upload never sits in memory. A body not wholly arrived ``body_timeout_s`` after the route
first asks for it is a 408: a slow client cannot hold a connection open by trickling it.

Usage::

    app.add_middleware(RequestLimits, max_bytes=100_000,
                       check_key=lambda headers, path, client: ...,
                       error_body=error_body, body_timeout_s=10.0)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse

from service.auth import AuthError
from service.domain.records import JsonObject
from service.errors import ApiError

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

BODY_METHODS = ("POST", "PUT", "PATCH")


def too_large_message(max_bytes: int) -> str:
    return f"request body is over the limit of {max_bytes} bytes"


class RequestLimits:
    def __init__(
        self,
        app: ASGIApp,
        max_bytes: int,
        check_key: Callable[[Mapping[str, str], str, str | None], object],
        error_body: Callable[..., JsonObject],
        body_timeout_s: float = 10.0,
    ) -> None:
        self.app = app
        self.body_timeout_s = body_timeout_s
        self.max_bytes = max_bytes
        self.check_key = check_key
        self.error_body = error_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in BODY_METHODS:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if scope["path"].startswith("/v1/"):
            try:
                client = scope.get("client")
                self.check_key(headers, scope["path"], client[0] if client else None)
            except AuthError as exc:
                await JSONResponse(self.error_body("unauthorized", str(exc)), status_code=401)(
                    scope, receive, send
                )
                return
            except ApiError as exc:  # e.g. this key's rate limit for the route is spent: 429
                await JSONResponse(
                    exc.body(),
                    status_code=exc.status,
                    headers=exc.headers,
                )(scope, receive, send)
                return
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_bytes:
            await JSONResponse(
                self.error_body("too_large", too_large_message(self.max_bytes)), status_code=413
            )(scope, receive, send)
            return
        received = 0
        loop = asyncio.get_running_loop()
        body_due = loop.time() + self.body_timeout_s  # the whole body, not each piece of it

        async def counted() -> Message:
            nonlocal received
            try:
                message = await asyncio.wait_for(receive(), max(0.0, body_due - loop.time()))
            except TimeoutError:
                raise HTTPException(
                    408, f"the request body did not arrive within {self.body_timeout_s:g} s"
                ) from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise HTTPException(413, too_large_message(self.max_bytes))
            return message

        await self.app(scope, counted, send)
