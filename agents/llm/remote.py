"""An OpenAI-compatible model server or a hosted provider, as the config names it: what each
engine builds its own client from (CrewAI: ``agents/crewai/remote_llm.py``; AutoGen:
``agents/autogen/client.py``).

Usage::

    model = RemoteModel(provider="openai/local-model", base_url="http://127.0.0.1:8080/v1",
                        api_key="none", structured_output="json_object")
    model.model                   # "local-model": what the server is asked for
    OpenAICompletion(**model.client_options(), max_retries=0)   # an engine's client
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class RemoteModel(BaseModel):
    """The model the roles call, resolved at start (key found, endpoint reached, structured
    output probed); the engine's client does the calling."""

    provider: str
    base_url: str | None = None
    api_key: str | None = None
    temperature: float | None = 0.0
    seed: int | None = None
    max_tokens: int = 256
    stream: bool = True
    structured_output: str = "json_schema"

    @property
    def openai_compatible(self) -> bool:
        """A ``base_url`` server or OpenAI itself (else a provider CrewAI's LLM knows)."""
        return bool(self.base_url) or self.provider.startswith("openai/")

    @property
    def model(self) -> str:
        """The name the endpoint is asked for: ``gpt-4o-mini`` of ``openai/gpt-4o-mini`` on an
        OpenAI-compatible API, else the provider string a CrewAI ``LLM`` takes whole."""
        return self.provider.split("/", 1)[-1] if self.openai_compatible else self.provider

    def client_options(self) -> dict[str, Any]:
        """What every engine's client is built with: the model asked for, where, with which
        key, and how it samples."""
        return {
            "model": self.model,
            "base_url": self.base_url,
            "api_key": self.api_key,
            "temperature": self.temperature,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
        }
