"""One request to a model server, the way every engine's client makes it: counted in flight
while it runs, recorded in the turn's ledger with its time and tokens when it returns, and a
failure recorded and raised as a :class:`agents.deadline.ModelServerError` naming the server
(the turn's :class:`agents.deadline.DeadlineExceeded` passes as it is).

CrewAI's ``TurnBoundOpenAI`` and AutoGen's ``TurnBoundOpenAIClient`` both send through it.

Usage::

    with server_call("http://127.0.0.1:8080/v1") as call:
        reply = client.chat.completions.create(..., timeout=call_timeout())
        call.tokens(reply.usage.prompt_tokens, reply.usage.completion_tokens)
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from agents.deadline import DeadlineExceeded, failed_call
from agents.usage import model_request, record_call


@dataclass
class ServerCall:
    """The request under way: when it started and the tokens its reply reported."""

    server: str
    started: float = field(default_factory=time.perf_counter)
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def tokens(self, prompt: int, completion: int) -> None:
        """The reply's usage, recorded when the request ends."""
        self.prompt_tokens, self.completion_tokens = int(prompt), int(completion)


@contextmanager
def server_call(server: str) -> Iterator[ServerCall]:
    """Make one request to ``server`` inside; see the module's docstring."""
    call = ServerCall(server)
    try:
        with model_request():
            yield call
    except DeadlineExceeded:
        raise
    except Exception as exc:
        raise failed_call(server, exc, call.started) from exc
    ms = (time.perf_counter() - call.started) * 1000
    record_call(call.prompt_tokens, call.completion_tokens, ms, purpose="ok")
