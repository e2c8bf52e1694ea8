"""The configured model as CrewAI's ``BaseLLM``: the embedded SmolLM2 behind an adapter, an
OpenAI-compatible server through ``TurnBoundOpenAI``, another provider through ``crewai.LLM``.

Usage::

    llm = crewai_llm(build_llm(settings.llm))     # a CrewAI BaseLLM is given back as it is
"""

from __future__ import annotations

from typing import Any

from crewai.llms.base_llm import BaseLLM
from pydantic import Field

from agents.llm.local import LocalLlamaLLM
from agents.llm.remote import RemoteModel


class CrewAILocalLLM(BaseLLM):
    """``LocalLlamaLLM`` (llama.cpp in-process) as a CrewAI ``BaseLLM``."""

    records_usage: bool = True  # the model records every call itself
    core: Any = Field(default=None, exclude=True)

    def supports_function_calling(self) -> bool:
        return bool(self.core.supports_function_calling())

    def supports_stop_words(self) -> bool:
        return bool(self.core.supports_stop_words())

    def get_context_window_size(self) -> int:
        return int(self.core.n_ctx)

    def get_input_tokens_count(
        self, messages: Any, tools: Any = None, response_model: Any = None
    ) -> int:
        return int(self.core.get_input_tokens_count(messages, tools, response_model))

    def call(self, *args: Any, **kwargs: Any) -> str | Any:
        """CrewAI's call, answered by the core (which takes CrewAI's arguments as they are)."""
        return self.core.call(*args, **kwargs)

    async def acall(self, *args: Any, **kwargs: Any) -> str | Any:
        return self.call(*args, **kwargs)


def crewai_llm(llm: Any) -> BaseLLM:
    """The model as a CrewAI ``BaseLLM``."""
    if isinstance(llm, BaseLLM):
        return llm
    if isinstance(llm, LocalLlamaLLM):
        return CrewAILocalLLM(model=llm.model, temperature=llm.temperature, core=llm)
    if isinstance(llm, RemoteModel):
        if llm.openai_compatible:
            from agents.crewai.remote_llm import TurnBoundOpenAI

            return TurnBoundOpenAI(
                **llm.client_options(),
                max_retries=0,
                stream=llm.stream,
                structured_output=llm.structured_output,
            )
        from crewai import LLM

        return LLM(**llm.client_options())
    raise TypeError(f"not a model CrewAI can call: {type(llm).__name__}")
