"""The pilot's errors: one JSON shape, ``{"error": {"code", "message", "details"?, ...}}``.

The field at fault has one spelling, for a refusal of a route and FastAPI's validation
alike: ``error.details[].field`` (with its ``problem``), never ``error.field``. A route names
it with ``field=`` and :func:`error_body` writes it; nothing else builds ``details``.

Usage::

    raise ApiError(404, "unknown_session", "no session 'x' for this key")
    raise ApiError(422, "unknown_agent", "no staff key named 'x'", field="agent")
    error_body("unavailable", "try again")   # {"error": {"code": ..., "message": ...}}
    # {"error": {"code": "unknown_agent", "message": ...,
    #            "details": [{"field": "agent", "problem": ...}]}}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, JsonValue, model_validator

from service.domain.records import JsonObject


class ErrorField(BaseModel):
    """One part of the request at fault: ``field`` is a dotted path in the body, a query or
    path parameter (``body`` for the body as a whole)."""

    field: str
    problem: str


class ErrorInfo(BaseModel):
    """What went wrong: a stable ``code`` to branch on, a ``message`` to show, and in
    ``details`` the fields at fault, the one place they are named (a route's refusal and a
    request that is not valid alike)."""

    # an error may add what a client can act on (a limit's retry time, a conflicting state)
    model_config = ConfigDict(extra="allow")

    code: str
    message: str
    details: list[ErrorField] | None = None

    @model_validator(mode="before")
    @classmethod
    def _one_spelling(cls, data: object) -> object:
        # the field at fault is named in ``details`` only: a second spelling is a bug
        if isinstance(data, dict) and "field" in data:
            raise ValueError("the field at fault goes in details[].field, not error.field")
        return data


class ErrorBody(BaseModel):
    """Every 4xx and 5xx answer of the pilot (FastAPI's validation errors included), but for
    ``/readyz``, whose 503 keeps the probe's ``{"ready", "checks"}`` (docs/pilot.md)."""

    error: ErrorInfo


ERROR_ANSWERS: dict[int | str, str] = {
    "4XX": "The request is refused: the error says why",
    "5XX": "The service failed or its store is down",
}
ERROR_RESPONSES: dict[int | str, dict[str, type[BaseModel] | str]] = {
    code: {"model": ErrorBody, "description": description} for code, description in ERROR_ANSWERS.items()
}
# for a route whose own answer is not JSON (a CSV file): its errors still are
JSON_ERRORS: dict[int | str, JsonObject] = {
    code: {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
    }
    for code, description in ERROR_ANSWERS.items()
}


class ApiError(Exception):
    """A refusal: ``status``, a stable ``code``, a ``message``; ``field`` names the part of
    the request at fault (written as ``details[].field`` by :func:`error_body`), ``extra``
    what else a client can act on (a retry time, the failing questions)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        extra: JsonObject | None = None,
        headers: dict[str, str] | None = None,
        *,
        field: str | None = None,
    ) -> None:
        super().__init__(message)
        if extra and {"field", "details"} & extra.keys():
            raise ValueError("name the field at fault with field=, not in extra")
        self.status, self.code, self.message, self.extra = status, code, message, extra or {}
        self.field, self.headers = field, headers or {}

    def body(self) -> JsonObject:
        return envelope(self.code, self.message, self.field, (), self.extra)


def error_body(
    code: str,
    message: str,
    *,
    field: str | None = None,
    details: Sequence[ErrorField] = (),
    **extra: JsonValue,
) -> JsonObject:
    """An error body: ``field`` (a refusal's one field at fault, the message its problem)
    and ``details`` (validation's fields) both land in ``details[]``."""
    return envelope(code, message, field, details, extra)


def envelope(
    code: str,
    message: str,
    field: str | None,
    details: Sequence[ErrorField],
    extra: Mapping[str, JsonValue],
) -> JsonObject:
    """The one place an error body is written."""
    named = [*details, *([ErrorField(field=field, problem=message)] if field else [])]
    error: JsonObject = {"code": code, "message": message}
    if named:
        error["details"] = [d.model_dump() for d in named]
    return {"error": {**error, **extra}}


def invalid_fields(errors: Sequence[object]) -> list[ErrorField]:
    """FastAPI's validation errors as the fields at fault."""
    return [
        ErrorField(field=field_of(e), problem=str(e.get("msg", "")))
        for e in errors
        if isinstance(e, dict)
    ]


def field_of(error: Mapping[str, object]) -> str:
    """Which part of the request is wrong; a JSON syntax error is the body's, not an offset."""
    if error.get("type") == "json_invalid":
        return "body"
    loc = error.get("loc")
    return ".".join(str(p) for p in (loc[1:] if isinstance(loc, list | tuple) else ())) or "body"
