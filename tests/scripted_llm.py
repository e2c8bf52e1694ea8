"""A scripted LLM: a test double that pins orchestration logic, never a product default.

It answers each structured call with the next scripted reply for that response model
(by class name), or with a reply computed from the prompt (a callable), and records usage
like a real backend. With tools it calls the chosen function, as a tool-calling LLM does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from crewai.llms.base_llm import BaseLLM
from pydantic import Field, PrivateAttr

from agents.llm.local import run_or_return_tool_call
from agents.usage import model_request, record_call

Reply = dict[str, Any] | str | Callable[[str], Any]


class ScriptedLLM(BaseLLM):
    model: str = "scripted/test-double"
    records_usage: bool = True
    _replies: dict[str, list[Reply]] = PrivateAttr(default_factory=dict)
    _seen: list[tuple[str, str]] = PrivateAttr(default_factory=list)
    last_messages: Any = None
    last_tools: list[Any] = Field(default_factory=list)

    def script(self, **replies: list[Reply]) -> ScriptedLLM:
        for name, items in replies.items():
            self._replies[name] = list(items)
        return self

    @property
    def seen(self) -> list[tuple[str, str]]:
        """(response model or 'tools', prompt text) of every call."""
        return self._seen

    def get_input_tokens_count(
        self, messages: Any, tools: Any = None, response_model: Any = None
    ) -> int:
        return len(str(messages)) // 4

    def supports_function_calling(self) -> bool:
        return True

    def call(
        self,
        messages: Any,
        tools: Any = None,
        callbacks: Any = None,
        available_functions: Any = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> Any:
        self.last_messages, self.last_tools = messages, list(tools or [])
        prompt = (
            messages
            if isinstance(messages, str)
            else "\n".join(str(m.get("content", "")) for m in messages)
        )
        name = "tools" if tools else (response_model.__name__ if response_model else "text")
        self._seen.append((name, prompt))
        queue = self._replies.get(name, [])
        reply: Reply = queue.pop(0) if len(queue) > 1 else (queue[0] if queue else "{}")
        if callable(reply):
            with model_request():  # a reply that takes its time is in flight meanwhile
                reply = reply(prompt)
        text = reply if isinstance(reply, str) else json.dumps(reply)
        record_call(len(prompt) // 4, len(text) // 4, 1.0, name)
        if tools:  # a tool call, exactly as the local backend hands it to CrewAI
            return run_or_return_tool_call(text, available_functions)
        return text
