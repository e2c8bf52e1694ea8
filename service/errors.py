"""The pilot's errors: one JSON shape, ``{"error": {"code", "message", ...}}``.

Usage::

    raise ApiError(404, "unknown_session", "no session 'x' for this key")
    error_body("unavailable", "try again")   # {"error": {"code": ..., "message": ...}}
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        extra: dict | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra or {}
        self.headers = headers or {}


def error_body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **extra}}


def field_of(error: dict[str, Any]) -> str:
    """Which part of the request is wrong; a JSON syntax error is the body's, not an offset."""
    if error.get("type") == "json_invalid":
        return "body"
    return ".".join(str(p) for p in error["loc"][1:]) or "body"
