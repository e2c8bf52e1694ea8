"""The pilot's errors: one JSON shape, ``{"error": {"code", "message", ...}}``.

Usage::

    raise ApiError(404, "unknown_session", "no session 'x' for this key")
    error_body("unavailable", "try again")   # {"error": {"code": ..., "message": ...}}
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ErrorField(BaseModel):
    """One part of the request at fault: ``field`` is a dotted path in the body or a query
    parameter (``body`` for the body as a whole)."""

    field: str
    problem: str


class ErrorInfo(BaseModel):
    """What went wrong: a stable ``code`` to branch on, a ``message`` to show, and for a
    request that is not valid the fields at fault."""

    # an error may add what a client can act on (a limit's retry time, a conflicting state)
    model_config = ConfigDict(extra="allow")

    code: str
    message: str
    details: list[ErrorField] | None = None


class ErrorBody(BaseModel):
    """Every 4xx and 5xx answer of the pilot (FastAPI's validation errors included)."""

    error: ErrorInfo


ERROR_RESPONSES: dict[int | str, dict[str, object]] = {
    "4XX": {"model": ErrorBody, "description": "The request is refused: the error says why"},
    "5XX": {"model": ErrorBody, "description": "The service failed or its store is down"},
}
# for a route whose own answer is not JSON (a CSV file): its errors still are
JSON_ERRORS: dict[int | str, dict[str, object]] = {
    code: {
        "description": answer["description"],
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
    }
    for code, answer in ERROR_RESPONSES.items()
}


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


def error_body(code: str, message: str, **extra: object) -> dict[str, object]:
    return {"error": {"code": code, "message": message, **extra}}


def field_of(error: dict[str, object]) -> str:
    """Which part of the request is wrong; a JSON syntax error is the body's, not an offset."""
    if error.get("type") == "json_invalid":
        return "body"
    loc = error.get("loc")
    return ".".join(str(p) for p in (loc[1:] if isinstance(loc, list | tuple) else ())) or "body"
