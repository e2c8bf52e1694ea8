"""The embedded SmolLM2 as an AutoGen ``ChatCompletionClient`` (the same llama.cpp backend).

Structured outputs (``json_output`` set to a pydantic model, as ``AssistantAgent`` does with
``output_content_type``) are constrained to the model's JSON schema; usage is recorded per call.
Any CrewAI-style ``BaseLLM`` with ``call(messages, response_model=...)`` can sit behind it, so
the scripted test double drives AutoGen exactly as it drives CrewAI.

Usage::

    client = BaseLLMChatClient(LocalLlamaLLM(model="local/smollm2"))
    agent = AssistantAgent("judge", model_client=client, output_content_type=Judgement)
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any

from autogen_core import CancellationToken, FunctionCall
from autogen_core.models import (
    ChatCompletionClient,
    CreateResult,
    LLMMessage,
    ModelCapabilities,
    ModelInfo,
    RequestUsage,
)
from autogen_core.tools import Tool, ToolSchema
from autogen_ext.models.openai import OpenAIChatCompletionClient
from pydantic import BaseModel

from agents.deadline import call_timeout, check_stream
from agents.llm.remote import RemoteModel
from agents.llm.server_call import server_call
from agents.llm.structured_output import parsed_here
from agents.usage import (
    UsageLedger,
    acting_as,
    current_role,
    merge_into_current,
)


def _role(message: LLMMessage) -> str:
    return {"SystemMessage": "system", "UserMessage": "user", "AssistantMessage": "assistant"}.get(
        type(message).__name__, "user"
    )


def _text(message: LLMMessage) -> str:
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return "\n".join(str(getattr(part, "content", part)) for part in content)


def _model_info() -> ModelInfo:
    """What the roles need of a model: tools and JSON output, no vision."""
    return ModelInfo(
        vision=False,
        function_calling=True,
        json_output=True,
        family="unknown",
        structured_output=True,
    )


class BaseLLMChatClient(ChatCompletionClient):
    """Adapts a supportcrew LLM backend to AutoGen's model-client interface."""

    records_usage = True  # its backend records every call itself

    def __init__(self, llm: Any, role: str = "") -> None:
        self._llm = llm
        self._role = role
        self._total = RequestUsage(prompt_tokens=0, completion_tokens=0)
        self._last = RequestUsage(prompt_tokens=0, completion_tokens=0)

    def for_role(self, role: str) -> BaseLLMChatClient:
        """The same model, its calls attributed to ``role`` (e.g. a team's selector)."""
        return BaseLLMChatClient(self._llm, role=role)

    @property
    def model_info(self) -> ModelInfo:
        return _model_info()

    @property
    def capabilities(self) -> ModelCapabilities:  # type: ignore[override]
        return ModelCapabilities(vision=False, function_calling=True, json_output=True)

    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = (),
        tool_choice: Any = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: CancellationToken | None = None,
    ) -> CreateResult:
        chat = [{"role": _role(m), "content": _text(m)} for m in messages]
        response_model = json_output if isinstance(json_output, type) else None
        with UsageLedger.activate() as ledger, acting_as(self._role or current_role()):
            if tools:
                schemas = [
                    {"type": "function", "function": dict(t.schema if isinstance(t, Tool) else t)}
                    for t in tools
                ]
                raw = self._llm.call(chat, tools=schemas)
            else:
                raw = self._llm.call(chat, response_model=response_model)
        merge_into_current(ledger)
        usage = RequestUsage(
            prompt_tokens=ledger.prompt_tokens, completion_tokens=ledger.completion_tokens
        )
        self._last = usage
        self._total = RequestUsage(
            prompt_tokens=self._total.prompt_tokens + usage.prompt_tokens,
            completion_tokens=self._total.completion_tokens + usage.completion_tokens,
        )
        content: str | list[FunctionCall] = str(raw)
        if tools and isinstance(raw, list):  # OpenAI-style tool calls, as CrewAI takes them
            content = [
                FunctionCall(
                    id=str(c.get("id", "call-1")),
                    name=c["function"]["name"],
                    arguments=c["function"]["arguments"],
                )
                for c in raw
            ]
        return CreateResult(
            finish_reason="function_calls" if isinstance(content, list) else "stop",
            content=content,
            usage=usage,
            cached=False,
        )

    async def create_stream(
        self, messages: Sequence[LLMMessage], **kwargs: Any
    ) -> AsyncGenerator[str | CreateResult, None]:
        yield await self.create(messages, **kwargs)

    async def close(self) -> None:
        return None

    def actual_usage(self) -> RequestUsage:
        return self._last

    def total_usage(self) -> RequestUsage:
        return self._total

    def count_tokens(self, messages: Sequence[LLMMessage], **kwargs: Any) -> int:
        return sum(len(_text(m)) // 4 for m in messages)

    def remaining_tokens(self, messages: Sequence[LLMMessage], **kwargs: Any) -> int:
        return 4096 - self.count_tokens(messages)


class TurnBoundOpenAIClient(OpenAIChatCompletionClient):
    """autogen-ext's OpenAI client bounded by the turn: each request's timeout is the time left
    before the evidence reserve (none is sent without enough), no client retries, a failure is
    a ``ModelServerError`` naming the server, and every request is recorded with its time."""

    records_usage = True

    def __init__(
        self, structured_output: str = "json_schema", stream: bool = False, **config: Any
    ) -> None:
        super().__init__(**config)
        self.server = config.get("base_url") or "api.openai.com"
        self.structured_output = structured_output
        self.stream = stream

    async def create(
        self,
        messages: Sequence[LLMMessage],
        *args: Any,
        extra_create_args: Mapping[str, Any] = {},
        **kwargs: Any,
    ) -> CreateResult:
        bounded = {**extra_create_args, "timeout": call_timeout()}
        json_output = kwargs.get("json_output")
        asked, sent = parsed_here(
            json_output if isinstance(json_output, type) else None, self.structured_output
        )
        if asked is not None:
            kwargs["json_output"] = None  # asked the way this server accepts, parsed by the agent
        if sent is not None:
            bounded["response_format"] = sent
        with server_call(self.server) as call:
            if self.stream:
                result = await self._streamed(messages, *args, extra_create_args=bounded, **kwargs)
            else:
                result = await super().create(messages, *args, extra_create_args=bounded, **kwargs)
            call.tokens(result.usage.prompt_tokens, result.usage.completion_tokens)
        return result

    async def _streamed(
        self,
        messages: Sequence[LLMMessage],
        *args: Any,
        extra_create_args: Mapping[str, Any],
        **kwargs: Any,
    ) -> CreateResult:
        """The reply read as a stream, cut (and its stream closed) at the turn's deadline."""
        chunks = super().create_stream(
            messages,
            *args,
            extra_create_args={**extra_create_args, "stream_options": {"include_usage": True}},
            **kwargs,
        )
        try:
            async for chunk in chunks:
                if isinstance(chunk, CreateResult):
                    if chunk.content in ("", []):  # not a stream of chunks (an HTML page)
                        raise ValueError(f"{self.server} streamed no reply")
                    return chunk
                check_stream(self.server)
        finally:
            await chunks.aclose()
        raise ValueError(f"the stream of {self.server} ended without a reply")


def openai_client(remote: RemoteModel) -> Any:
    """autogen-ext's OpenAI client for ``openai/...`` providers or any OpenAI-compatible
    ``base_url`` (vLLM, ``python -m llama_cpp.server``): the model ``build_llm`` resolved."""
    # the name the OpenAI API asks for, whatever the provider's prefix
    options = {**remote.client_options(), "model": remote.provider.split("/", 1)[-1]}
    return TurnBoundOpenAIClient(
        structured_output=remote.structured_output,
        stream=remote.stream,
        max_retries=0,
        model_info=_model_info(),
        **options,
    )
