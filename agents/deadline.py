"""Every turn has a deadline (``turn_timeout_s``): model calls respect it, the turn ends by it.

The deadline of the running turn lives in a context variable, so every model call of that turn
(in any thread the frameworks use) sees it: a call that would start too late is not made, and
local generation stops when the time is up. Roles then take their evidence path.

Usage::

    with turn_deadline(time.monotonic() + 15):
        ...
        if expired():            # before a model call
            raise DeadlineExceeded("judge")
"""

from __future__ import annotations

import contextvars
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("turn_deadline",
                                                                         default=None)


class DeadlineExceeded(RuntimeError):
    """The turn's deadline passed before or during a model call."""


@contextmanager
def turn_deadline(at: float | None) -> Iterator[None]:
    token = _DEADLINE.set(at)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def time_left() -> float:
    """Seconds until the running turn's deadline (infinite outside a turn)."""
    at = _DEADLINE.get()
    return math.inf if at is None else at - time.monotonic()


def expired() -> bool:
    return time_left() <= 0
