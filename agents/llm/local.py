"""The embedded chat model: SmolLM2-135M-Instruct (GGUF) in-process through llama-cpp-python.

Framework-free (CrewAI's adapter: ``agents/crewai/llm.py``; AutoGen's client:
``agents/autogen/client.py``). Structured outputs are constrained to the response model's JSON schema
(llama.cpp grammar) with bounded string lengths and list sizes, so the small model cannot run
away; tools are rendered into the prompt and the call is forced the same way (llama.cpp drops
tool schemas for SmolLM2's chat template, so the model would otherwise never see them).
Temperature 0 and a fixed seed: runs repeat.

Usage::

    llm = LocalLlamaLLM(model="local/smollm2")
    llm.call("Say hi", response_model=Greeting)   # -> '{"text": "Hi"}'
"""

from __future__ import annotations

import copy
import json
import math
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, PrivateAttr

from agents.deadline import DeadlineExceeded, expired, time_left
from agents.llm.model_file import local_gguf
from agents.usage import model_request, record_call

MAX_STRING = 400
MIN_START_S = 1.5  # seconds a local call needs at least (prompt evaluation)
_LLAMA_LOCK = threading.RLock()
MAX_ITEMS = 5
_RUNTIMES: dict[tuple[str, int, int], Any] = {}
_RUNTIME_LOCK = threading.Lock()


def load_llama(path: Path | None, n_ctx: int = 4096, seed: int = 7) -> Any:
    """One llama.cpp model per (path, context, seed) per process, shared by every agent;
    ``None``: the shipped model (agents/llm/model_file.py)."""
    from llama_cpp import Llama

    path = path or local_gguf()
    key = (str(path), n_ctx, seed)
    with _RUNTIME_LOCK:
        if key not in _RUNTIMES:
            _RUNTIMES[key] = Llama(
                model_path=str(path), n_ctx=n_ctx, seed=seed, verbose=False, n_threads=2
            )
        return _RUNTIMES[key]


def bounded_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Copy a JSON schema, capping every free string and list so generation must end."""
    schema = copy.deepcopy(schema)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "string" and "enum" not in node and "const" not in node:
                node["maxLength"] = min(int(node.get("maxLength", MAX_STRING)), MAX_STRING)
            if node.get("type") == "array":
                node["maxItems"] = min(int(node.get("maxItems", MAX_ITEMS)), MAX_ITEMS)
            if node.get("type") == "object" and "additionalProperties" not in node:
                node["additionalProperties"] = False
            if isinstance(node.get("additionalProperties"), dict):
                node["maxProperties"] = min(int(node.get("maxProperties", MAX_ITEMS)), MAX_ITEMS)
            if isinstance(node.get("title"), str):
                node.pop("title")
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return schema


def tool_call_schema(tools: list[dict[str, Any]]) -> dict[str, Any]:
    """A schema that admits exactly one call of one of ``tools`` (OpenAI tool format)."""
    options = []
    for tool in tools:
        function = tool.get("function", tool)
        parameters = function.get("parameters") or {"type": "object", "properties": {}}
        options.append(
            {
                "type": "object",
                "properties": {"name": {"const": function["name"]}, "arguments": parameters},
                "required": ["name", "arguments"],
            }
        )
    return bounded_schema(options[0] if len(options) == 1 else {"anyOf": options})


def render_tools(tools: list[dict[str, Any]]) -> str:
    lines = [
        "You must call exactly one of these tools. Reply with JSON "
        '{"name": <tool name>, "arguments": {...}}.'
    ]
    for tool in tools:
        function = tool.get("function", tool)
        lines.append(f"- {function['name']}: {function.get('description', '')}")
    return "\n".join(lines)


def run_or_return_tool_call(raw: str, available_functions: dict[str, Any] | None) -> Any:
    """A forced tool call as CrewAI expects it: run by us when CrewAI hands us the functions,
    else returned as an OpenAI-style tool-call list for CrewAI's executor to run."""
    try:
        call = json.loads(raw)
        name, arguments = str(call["name"]), call.get("arguments") or {}
    except (json.JSONDecodeError, KeyError, TypeError):
        return raw  # cut off mid-call: the caller sees no valid call and moves on
    if available_functions is None:
        return [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ]
    function = available_functions.get(name)
    return raw if function is None else str(function(**arguments))


def as_chat(messages: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    """CrewAI's messages (a string or message dicts) as llama.cpp chat messages."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    return [{"role": m.get("role", "user"), "content": str(m.get("content") or "")} for m in messages]


class LocalLlamaLLM(BaseModel):
    """SmolLM2 through llama.cpp, schema-constrained, usage recorded per call."""

    model_config = ConfigDict(protected_namespaces=())

    model: str = "local/smollm2-135m-instruct"
    temperature: float | None = 0.0
    seed: int = 7
    max_tokens: int = 256
    n_ctx: int = 4096
    model_path: str | None = None
    records_usage: bool = True
    # one lock for the process's llama.cpp contexts, shared by every LocalLlamaLLM using them
    _lock: threading.RLock = PrivateAttr(default_factory=lambda: _LLAMA_LOCK)

    def _llama(self) -> Any:
        return load_llama(Path(self.model_path) if self.model_path else None, self.n_ctx, self.seed)

    def supports_function_calling(self) -> bool:
        return True

    def supports_stop_words(self) -> bool:
        return False

    def get_context_window_size(self) -> int:
        return self.n_ctx

    def get_input_tokens_count(
        self, messages: Any, tools: Any = None, response_model: Any = None
    ) -> int:
        """The exact prompt size, counted by the model's own tokenizer."""
        text = (
            messages
            if isinstance(messages, str)
            else "\n".join(str(m.get("content") or "") for m in messages)
        )
        with self._lock:  # the tokenizer shares llama.cpp's context with a running call
            return len(self._llama().tokenize(text.encode("utf-8"), add_bos=False))

    def complete(
        self,
        messages: list[dict[str, Any]],
        schema: dict[str, Any] | None,
        purpose: str = "",
        max_tokens: int | None = None,
    ) -> str:
        """One chat completion, JSON-constrained when ``schema`` is given; usage recorded."""
        llama = self._llama()
        kwargs: dict[str, Any] = {
            "temperature": self.temperature or 0.0,
            "max_tokens": max_tokens or self.max_tokens,
            "seed": self.seed,
        }
        if schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
        asked = time.perf_counter()
        with self._lock:  # one llama.cpp context: calls of concurrent turns wait their turn
            if time_left() < MIN_START_S:  # its prompt evaluation alone would overrun
                raise DeadlineExceeded(f"{purpose or 'model'} call not started: turn deadline")
            started = time.perf_counter()
            with model_request():
                text, prompt, completion = self._complete(llama, messages, kwargs)
            done = time.perf_counter()
        record_call(
            prompt, completion, (done - started) * 1000, purpose, wait_ms=(started - asked) * 1000
        )
        return text.strip()

    def _complete(
        self, llama: Any, messages: list[dict[str, Any]], kwargs: dict[str, Any]
    ) -> tuple[str, int, int]:
        """The completion's text and its prompt and completion tokens (cut at the deadline)."""
        fitted = _fit(messages, llama, self.n_ctx, kwargs["max_tokens"])
        if not math.isinf(time_left()):
            return _generate_until_deadline(llama, fitted, kwargs)
        response = llama.create_chat_completion(messages=fitted, **kwargs)
        usage = response.get("usage") or {}
        text = str(response["choices"][0]["message"].get("content") or "")
        return text, int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))

    def call(
        self,
        messages: str | list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        callbacks: list[Any] | None = None,
        available_functions: dict[str, Any] | None = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: type[BaseModel] | None = None,
    ) -> str | Any:
        chat = as_chat(messages)
        if tools:
            chat = [{"role": "system", "content": render_tools(tools)}, *chat]
            raw = self.complete(
                chat, tool_call_schema(tools), purpose="tool_call", max_tokens=2 * self.max_tokens
            )
            return run_or_return_tool_call(raw, available_functions)
        schema = bounded_schema(response_model.model_json_schema()) if response_model else None
        return self.complete(chat, schema, purpose="structured" if schema else "text")

    async def acall(self, *args: Any, **kwargs: Any) -> str | Any:
        return self.call(*args, **kwargs)


def _generate_until_deadline(
    llama: Any, messages: list[dict[str, Any]], kwargs: dict[str, Any]
) -> tuple[str, int, int]:
    """Stream the completion and stop when the turn's deadline passes (output cut short)."""
    pieces: list[str] = []
    stream = llama.create_chat_completion(messages=messages, stream=True, **kwargs)
    try:
        for chunk in stream:
            pieces.append(str(chunk["choices"][0].get("delta", {}).get("content") or ""))
            if expired():
                break
    finally:
        # closed here, under the model's lock: a generator left to the garbage collector
        # would clean up llama.cpp's context later, from any thread, during another call
        stream.close()
    completion = len(pieces)
    return "".join(pieces), max(0, int(getattr(llama, "n_tokens", 0)) - completion), completion


def _fit(messages: list[dict[str, Any]], llama: Any, n_ctx: int, reserve: int) -> list[dict[str, Any]]:
    """Trim the longest message from its middle until the prompt fits the context window."""
    budget = n_ctx - reserve - 64
    fitted = [dict(m) for m in messages]
    while True:
        total = sum(len(llama.tokenize(m["content"].encode(), add_bos=False)) for m in fitted)
        if total <= budget:
            return fitted
        longest = max(fitted, key=lambda m: len(m["content"]))
        text = longest["content"]
        cut = max(len(text) // 4, 200)
        middle = len(text) // 2
        longest["content"] = text[: middle - cut // 2] + " … " + text[middle + cut // 2 :]
