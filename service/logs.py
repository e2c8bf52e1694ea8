"""The pilot's logs as JSON lines when ``observability.json_logs`` is set: one object a line
with the time, level, logger, message and the session the request is about (from its path),
so a log pipeline can follow one conversation. A customer's words are logged only with
``observability.log_message_text``.

Usage::

    config = uvicorn_log_config(settings.observability)    # None: uvicorn's plain text
    app.add_middleware(SessionLogContext)                 # session_id on every line
    log.info("turn finished", extra={"fields": {"verdict": "answered"}})
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from config.settings import Observability

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

SESSION_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("session_id", default=None)
_SESSION_PATH = re.compile(r"^/v1/(?:sessions|handoffs)/([0-9a-f]{32})(?:/|$)")


class JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        session = getattr(record, "session_id", None) or SESSION_ID.get()
        if session:
            line["session_id"] = session
        line.update(getattr(record, "fields", None) or {})
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def uvicorn_log_config(observability: Observability) -> dict[str, object] | None:
    """A ``logging.config.dictConfig`` for uvicorn and the service's own loggers."""
    if not observability.json_logs:
        return None
    handler = {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": JsonLines}},
        "handlers": {"json": handler},
        "root": {"handlers": ["json"], "level": "INFO"},
        "loggers": {
            name: {"handlers": ["json"], "level": "INFO", "propagate": False}
            for name in ("uvicorn", "uvicorn.error", "uvicorn.access")
        },
    }


class SessionLogContext:
    """An ASGI middleware: the session a request's path names, for every log line it causes."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = _SESSION_PATH.match(scope.get("path", "")) if scope["type"] == "http" else None
        token = SESSION_ID.set(found.group(1) if found else None)
        try:
            await self.app(scope, receive, send)
        finally:
            SESSION_ID.reset(token)
