"""Every turn has a deadline (``turn_timeout_s``): model calls respect it, the turn ends by it.

The deadline of the running turn lives in a context variable, so every model call of that turn
(in any thread the frameworks use) sees it: a call that would start too late is not made, and
local generation stops when the time is up. Roles then take their evidence path. A customer who
cancels (Ctrl-C in the chat) moves the deadline to now.

Usage::

    with turn_deadline(time.monotonic() + 15):
        ...
        if expired():            # before a model call
            raise DeadlineExceeded("judge")
"""

from __future__ import annotations

import contextvars
import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

_DEADLINE: contextvars.ContextVar[tuple[float | None, threading.Event | None]] = contextvars.ContextVar(
    "turn_deadline", default=(None, None)
)


class DeadlineExceeded(RuntimeError):
    """The turn's deadline passed before or during a model call."""


@contextmanager
def turn_deadline(at: float | None, cancel: threading.Event | None = None) -> Iterator[None]:
    """The running turn ends by ``at`` (monotonic seconds), or at once when ``cancel`` is set."""
    token = _DEADLINE.set((at, cancel))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def current_deadline() -> tuple[float | None, threading.Event | None]:
    """The running turn's deadline and cancel event (to restore with :func:`turn_deadline`)."""
    return _DEADLINE.get()


@contextmanager
def budget(share: float) -> Iterator[float]:
    """Model calls inside end by ``share`` of the time the running turn has left (or once it
    is cancelled): a part of the turn for one purpose (a hierarchical manager's own calls).
    Yields when the budget ends (monotonic seconds; infinite outside a turn)."""
    at, cancel = _DEADLINE.get()
    if at is None:
        yield math.inf
        return
    end = time.monotonic() + share * max(0.0, at - time.monotonic())
    token = _DEADLINE.set((end, cancel))
    try:
        yield end
    finally:
        _DEADLINE.reset(token)


def time_left() -> float:
    """Seconds until the running turn's deadline (infinite outside a turn; 0 once cancelled)."""
    at, cancel = _DEADLINE.get()
    if cancel is not None and cancel.is_set():
        return 0.0
    return math.inf if at is None else at - time.monotonic()


def expired() -> bool:
    return time_left() <= 0


class ReplyCut(RuntimeError):
    """A streamed model reply was still arriving at the turn's deadline; its stream is closed,
    so the server stops generating it."""


def check_stream(server: str) -> None:
    """Between two chunks of a streamed reply: :class:`ReplyCut` once the turn's time is up."""
    if time_left() <= 0:
        raise ReplyCut(f"the reply of {server} was still streaming at the turn's deadline")


MIN_CALL_S = 0.5
DEFAULT_CALL_TIMEOUT_S = 60.0


class ModelServerError(RuntimeError):
    """A model server failed a request (down, HTTP error, timeout, not a completion): the role
    takes its evidence path. Never an ``OSError``: it is not a knowledge-base outage."""


def call_timeout(configured: float | None = None) -> float:
    """The HTTP timeout of a model request starting now: the configured one, cut to the time
    left in the turn; :class:`DeadlineExceeded` when too little is left to start one."""
    left = time_left()
    if left < MIN_CALL_S:
        raise DeadlineExceeded("no time left in the turn for a model call")
    return min(configured or DEFAULT_CALL_TIMEOUT_S, left)


def failed_call(server: str, exc: BaseException, started: float) -> ModelServerError:
    """A model request that failed: recorded in the turn's ledger with its time (started:
    ``time.perf_counter()`` at its start), returned as the error naming the server."""
    from agents.usage import record_call

    record_call(0, 0, (time.perf_counter() - started) * 1000, purpose=f"failed: {type(exc).__name__}")
    return ModelServerError(f"model server {server}: {type(exc).__name__}: {str(exc)[:200]}")
