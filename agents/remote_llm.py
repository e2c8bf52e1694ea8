"""An OpenAI-compatible model server behind CrewAI, bounded by the turn.

CrewAI's native OpenAI client with three changes a support turn needs:

* every request's HTTP timeout is the time left before the turn's evidence reserve, with no
  client retries, and a request that would start with less than a half second left is not
  sent: the role takes its evidence path and the retrieval step still searches in time;
* a failed request (server down, HTTP error, timeout, a body that is not a completion) is a
  :class:`ModelServerError` naming the server, never an ``OSError`` that the turn would take
  for a knowledge-base outage;
* every request, failed or late ones included, is recorded in the turn's ledger with its time
  and status.

Usage::

    llm = TurnBoundOpenAI(model="gpt-4o-mini", base_url="http://127.0.0.1:8080/v1",
                          api_key="none", max_tokens=256)
"""

from __future__ import annotations

import contextvars
import time
from typing import Any

from crewai.llms.providers.openai.completion import OpenAICompletion

from agents.deadline import DeadlineExceeded, ModelServerError, call_timeout
from agents.usage import record_call

_LAST_USAGE: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "supportcrew_last_usage", default=None)


class TurnBoundOpenAI(OpenAICompletion):
    records_usage: bool = True
    remote_server: bool = True  # AutoGen talks to the same server with its own client

    def _get_sync_client(self) -> Any:
        return super()._get_sync_client().with_options(timeout=call_timeout(self.timeout),
                                                       max_retries=0)

    def call(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        _LAST_USAGE.set(None)
        try:
            result = super().call(*args, **kwargs)
        except DeadlineExceeded:
            raise
        except Exception as exc:
            record_call(0, 0, (time.perf_counter() - started) * 1000,
                        purpose=f"failed: {type(exc).__name__}")
            raise ModelServerError(f"model server {self.base_url or 'api.openai.com'}: "
                                   f"{type(exc).__name__}: {str(exc)[:200]}") from exc
        usage = _LAST_USAGE.get() or {}
        record_call(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)),
                    (time.perf_counter() - started) * 1000, purpose="ok")
        return result

    def _extract_openai_token_usage(self, response: Any) -> dict[str, Any]:
        usage = super()._extract_openai_token_usage(response)
        _LAST_USAGE.set(usage)  # this thread's request: concurrent turns share the client
        return usage
