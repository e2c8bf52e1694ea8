"""An OpenAI-compatible model server behind CrewAI, bounded by the turn.

CrewAI's native OpenAI client with three changes a support turn needs:

* every request's HTTP timeout is the time left before the turn's evidence reserve, with no
  client retries, and a request that would start with less than a half second left is not
  sent: the role takes its evidence path and the retrieval step still searches in time;
  a streamed reply (``llm.stream``) still arriving at the deadline is cut and its stream
  closed, so the server stops generating it;
* a failed request (server down, HTTP error, timeout, a body that is not a completion) is a
  :class:`ModelServerError` naming the server, never an ``OSError`` that the turn would take
  for a knowledge-base outage;
* every request, failed or late ones included, is recorded in the turn's ledger with its time
  and status;
* typed outputs are asked the way the server accepts (``structured_output``, see
  ``agents/llm/structured_output.py``) and parsed here when not ``json_schema``.

Usage::

    llm = TurnBoundOpenAI(model="gpt-4o-mini", base_url="http://127.0.0.1:8080/v1",
                          api_key="none", max_tokens=256, stream=True)
"""

from __future__ import annotations

import contextvars
from typing import Any

from crewai.llms.providers.openai.completion import OpenAICompletion
from pydantic import BaseModel

from agents.deadline import ReplyCut, call_timeout, check_stream
from agents.llm.server_call import server_call
from agents.llm.structured_output import parsed_here
from tasks.role_output import RoleFailed, parse_output

_LAST_USAGE: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "supportcrew_last_usage", default=None
)
_OPEN_STREAM: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "supportcrew_open_stream", default=None
)
_RESPONSE_FORMAT: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "supportcrew_response_format", default=None
)


class TurnBoundOpenAI(OpenAICompletion):
    records_usage: bool = True
    structured_output: str = "json_schema"

    def _get_sync_client(self) -> Any:
        client = (
            super()._get_sync_client().with_options(timeout=call_timeout(self.timeout), max_retries=0)
        )
        completions = client.chat.completions  # this request's own client (with_options)
        create = completions.create

        def create_and_keep(*args: Any, **kwargs: Any) -> Any:
            reply = create(*args, **kwargs)
            _OPEN_STREAM.set(reply if kwargs.get("stream") else None)
            return reply

        completions.create = create_and_keep
        return client

    def call(self, *args: Any, response_model: type[BaseModel] | None = None, **kwargs: Any) -> Any:
        _LAST_USAGE.set(None)
        asked, sent = parsed_here(response_model, self.structured_output)
        _RESPONSE_FORMAT.set(sent)
        kwargs["response_model"] = None if asked is not None else response_model
        with server_call(self.base_url or "api.openai.com") as call:
            result = super().call(*args, **kwargs)
            usage = _LAST_USAGE.get() or {}
            call.tokens(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0))
        if asked is not None and isinstance(result, str):
            try:
                return parse_output(result, asked)
            except RoleFailed:
                return result  # the role's own parsing notes what was wrong
        return result

    def _prepare_completion_params(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        params = super()._prepare_completion_params(*args, **kwargs)
        if _RESPONSE_FORMAT.get() is not None:
            params["response_format"] = _RESPONSE_FORMAT.get()
        return params

    def _emit_stream_chunk_event(self, *args: Any, **kwargs: Any) -> None:
        try:
            check_stream(self.base_url or "api.openai.com")
        except ReplyCut:
            stream = _OPEN_STREAM.get()
            if stream is not None:  # closed now, not when CrewAI lets go of the exception
                stream.close()
            raise
        super()._emit_stream_chunk_event(*args, **kwargs)

    def _extract_openai_token_usage(self, response: Any) -> dict[str, Any]:
        usage = super()._extract_openai_token_usage(response)
        _LAST_USAGE.set(usage)  # this thread's request: concurrent turns share the client
        return usage
