"""Count every LLM call of a turn: role, prompt and completion tokens, duration.

``crew.usage_metrics`` over-counts when agents share one LLM object, so backends record into
the ledger that is active for the current turn instead.

Usage::

    with UsageLedger.activate() as ledger:
        ...  # any LLM call made here is recorded
    ledger.calls, ledger.prompt_tokens
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass(frozen=True)
class LlmCall:
    role: str
    prompt_tokens: int
    completion_tokens: int
    ms: float
    purpose: str = ""
    wait_ms: float = 0.0


@dataclass
class UsageLedger:
    calls: list[LlmCall] = field(default_factory=list)
    in_flight: int = 0  # model requests started and not yet ended (see ``model_request``)

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens for c in self.calls)

    @property
    def completion_tokens(self) -> int:
        return sum(c.completion_tokens for c in self.calls)

    @classmethod
    @contextmanager
    def activate(cls) -> Iterator[UsageLedger]:
        ledger = cls()
        token = _CURRENT.set(ledger)
        outermost = _TURN.set(ledger) if _TURN.get() is None else None
        try:
            yield ledger
        finally:
            _CURRENT.reset(token)
            if outermost is not None:
                _TURN.reset(outermost)


_CURRENT: contextvars.ContextVar[UsageLedger | None] = contextvars.ContextVar(
    "supportcrew_usage", default=None
)
_ROLE: contextvars.ContextVar[str] = contextvars.ContextVar("supportcrew_role", default="")
# the turn's own (outermost) ledger: an adapter's nested ledger is merged only when its call ends
_TURN: contextvars.ContextVar[UsageLedger | None] = contextvars.ContextVar(
    "supportcrew_turn_usage", default=None
)


@contextmanager
def model_request() -> Iterator[None]:
    """Count one model request as in flight in the turn's ledger while it runs: a turn the
    evidence path takes over mid-request still counts the request it made (it is recorded
    with its time only when it returns, after the turn's trace was written).

        with model_request():
            reply = client.chat.completions.create(...)
    """
    ledger = _TURN.get()
    if ledger is not None:
        ledger.in_flight += 1
    try:
        yield
    finally:
        if ledger is not None:
            ledger.in_flight -= 1


def record_call(
    prompt_tokens: int, completion_tokens: int, ms: float, purpose: str = "", wait_ms: float = 0.0
) -> None:
    """Record one LLM call into the active ledger (no-op outside a turn); ``ms`` is the
    model's own time, ``wait_ms`` the time spent waiting for the model to be free."""
    ledger = _CURRENT.get()
    if ledger is not None:
        ledger.calls.append(LlmCall(_ROLE.get(), prompt_tokens, completion_tokens, ms, purpose, wait_ms))


def merge_into_current(ledger: UsageLedger) -> None:
    """Copy the calls of a nested ledger into the active (outer) one, if any."""
    outer = _CURRENT.get()
    if outer is not None and outer is not ledger:
        outer.calls.extend(ledger.calls)


def current_role() -> str:
    return _ROLE.get()


def attribute_calls_to(role: str) -> None:
    """From now on in this context, LLM calls count for ``role`` (until ``acting_as`` ends)."""
    _ROLE.set(role)


@contextmanager
def acting_as(role: str) -> Iterator[None]:
    """Attribute LLM calls made inside to ``role``."""
    token = _ROLE.set(role)
    try:
        yield
    finally:
        _ROLE.reset(token)
