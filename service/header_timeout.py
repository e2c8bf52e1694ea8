"""A deadline for a request's headers: connections that trickle them in are closed with 408.

uvicorn bounds the idle time between requests (keep-alive) but not the time a request's
headers take, so a client that opens connections and sends a header byte now and then
(slowloris) holds them for good. This is uvicorn's h11 protocol with one timer more: armed
when a connection opens or a request's first byte arrives, cleared when its headers are
complete. The body has its own deadline (``service/limits.py``).

Usage::

    uvicorn.Server(server_config(app, "127.0.0.1", 8000, header_timeout_s=10.0)).run()
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

import h11
import uvicorn
from uvicorn.config import LOGGING_CONFIG
from uvicorn.protocols.http.h11_impl import H11Protocol

from service.errors import error_body

if TYPE_CHECKING:
    from starlette.types import ASGIApp


def timeout_response(seconds: float) -> bytes:
    """The 408 a connection gets when its request headers are not complete in time."""
    body = json.dumps(
        error_body("header_timeout", f"the request headers did not arrive within {seconds:g} s")
    )
    return (
        f"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n{body}"
    ).encode()


class HeaderTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol; ``header_timeout_s`` is set by :func:`header_timeout_protocol`."""

    header_timeout_s = 10.0
    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is h11.IDLE:  # still reading a request's headers
            if self._header_timer is None and data:
                self._arm()
        else:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_too_slow)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            if self.conn.our_state is h11.IDLE:  # nothing of a response was sent
                self.transport.write(timeout_response(self.header_timeout_s))
            self.transport.close()


def header_timeout_protocol(seconds: float) -> type[HeaderTimeoutProtocol]:
    """The protocol class to give uvicorn, with ``seconds`` as the headers' deadline."""
    return type("HeaderTimeoutProtocol", (HeaderTimeoutProtocol,), {"header_timeout_s": seconds})


def server_config(
    app: ASGIApp,
    host: str,
    port: int,
    header_timeout_s: float,
    log_level: str = "info",
    log_config: dict[str, object] | None = None,
    trusted_proxies: Sequence[str] = ("127.0.0.1", "::1"),
) -> uvicorn.Config:
    """How the pilot is served (``main.py serve`` and the tests' live servers alike);
    ``log_config`` replaces uvicorn's own (``service/logs.py``: JSON lines). The client
    address a request is counted under is the connection's, or, when the connection comes
    from one of ``trusted_proxies`` (``pilot.trusted_proxies``), the one its
    ``X-Forwarded-For`` names (uvicorn's proxy headers: the nearest address not itself a
    trusted proxy); from any other peer that header is ignored."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        http=header_timeout_protocol(header_timeout_s),
        proxy_headers=True,
        forwarded_allow_ips=list(trusted_proxies),
        log_config=log_config or LOGGING_CONFIG,  # None: uvicorn's own
    )
