"""What a failure in a turn means: a store or search outage (an honest "connection problem"),
or a model that gave nothing usable (noted; the evidence path goes on).

Usage::

    with tolerated(state, "judge") as failure:   # an outage propagates; anything else is noted
        judgement = ask_the_judge()
    if failure.error: ...                        # "TimeoutError: ..."
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from storage.qdrant.store import StoreError
from tasks.state import TurnState


class RetrievalUnavailable(RuntimeError):
    """The knowledge base or the memory store could not be reached for this turn."""


class TurnFailed(RuntimeError):
    """A turn stopped on an exception; ``state`` holds what it had done (its trace)."""

    def __init__(self, state: TurnState, cause: BaseException) -> None:
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.state = state
        self.cause = cause


def outage_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean a store or search service is down, not a bug."""
    import httpx
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    from integrations.custom_service import CustomServiceError

    return (
        StoreError,
        CustomServiceError,
        OSError,
        httpx.HTTPError,
        ResponseHandlingException,
        UnexpectedResponse,
    )


def is_outage(exc: BaseException) -> bool:
    return isinstance(exc, (RetrievalUnavailable, *outage_errors()))


@dataclass
class Failure:
    """What ``tolerated`` caught: the error's type and first words, "" when nothing failed."""

    error: str = ""


@contextmanager
def tolerated(state: TurnState, what: str) -> Iterator[Failure]:
    """Run a model's part of a step: an outage propagates, any other exception is noted in
    the trace as ``{what} failed (...)`` and the step goes on without the model's output."""
    failure = Failure()
    try:
        yield failure
    except Exception as exc:
        if is_outage(exc):
            raise
        failure.error = f"{type(exc).__name__}: {str(exc)[:160]}"
        state.note(f"{what} failed ({failure.error})")
