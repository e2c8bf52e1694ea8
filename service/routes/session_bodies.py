"""The bodies a customer's session routes take (``service/routes/sessions.py``,
``session_actions.py``): each refuses unknown fields, and what it accepts is what the domain
may act on.

Usage::

    NewSession(customer_id="c-001", slots={"product": "router"})
    Feedback(turn_index=0, rating="up")
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator

from storage.memory import ANONYMOUS, ScopeError, check_id
from tasks.schemas import CustomerMessage, PlainText


class NewSession(BaseModel):
    model_config = ConfigDict(extra="forbid")
    customer_id: PlainText | None = Field(default=None, min_length=1, max_length=200)
    slots: dict[PlainText, PlainText] = Field(default_factory=dict)

    @field_validator("customer_id")
    @classmethod
    def _memory_accepts_it(cls, value: str | None) -> str | None:
        """The same rules the memory scope applies, so a session never outlives its id; ids of
        anonymous web visitors are the service's to give, never a caller's."""
        if value is not None:
            try:
                check_id("customer_id", value)
            except ScopeError as exc:
                raise ValueError(str(exc)) from None
            if value.startswith(ANONYMOUS):
                raise ValueError(
                    f"customer ids starting with {ANONYMOUS!r} name anonymous "
                    "web visitors and cannot be given"
                )
        return value


class NewMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: CustomerMessage


class Feedback(BaseModel):
    model_config = ConfigDict(extra="forbid")
    turn_index: int = Field(ge=0)
    rating: Literal["up", "down"]
    comment: PlainText = Field(default="", max_length=2000)


class Satisfaction(BaseModel):
    """The closing question, "Did we solve your problem today?": yes (true) or no (false)."""

    model_config = ConfigDict(extra="forbid")
    solved: StrictBool  # "yes", 1 or null are refused (422 naming ``solved``), not read as true


class Handoff(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: PlainText = Field(default="requested by the customer", max_length=500)
