"""Pick the chat model from config: the embedded SmolLM2, or a remote model.

``llm.provider: local`` runs the GGUF in-process (``LocalLlamaLLM``). Anything else
(``openai/gpt-4o-mini``, ``ollama/qwen2.5:7b``, or an OpenAI-compatible ``base_url`` such as
vLLM or ``python -m llama_cpp.server``) is a :class:`RemoteModel` that each engine builds its
client from. A missing key or an unreachable endpoint is one clear :class:`LlmConfigError` at
start, not a stack trace mid-turn. Framework-free: the engines adapt what this returns.

Usage::

    llm = build_llm(settings.llm)
"""

from __future__ import annotations

import importlib.util
import os
import urllib.error
import urllib.request
from typing import Any

from agents.llm.remote import RemoteModel
from config.settings import LlmSettings

KEYLESS_PROVIDERS = ("ollama/", "ollama_chat/", "hosted_vllm/")
NO_KEY = "none"  # what a server without authentication is sent as the bearer key
# a single-slot server (llama.cpp's) answers /models only after the request it is busy with
REACHABLE_TIMEOUT_S = 30.0


class LlmConfigError(RuntimeError):
    """The configured model cannot be used; the message says why and what to set."""


def _check_reachable(base_url: str, api_key: str | None) -> None:
    request = urllib.request.Request(base_url.rstrip("/") + "/models")
    if api_key and api_key != NO_KEY:
        request.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(request, timeout=REACHABLE_TIMEOUT_S):
            return
    except urllib.error.HTTPError:
        return  # the server answered; authentication errors show on the first call
    except (urllib.error.URLError, OSError) as exc:
        raise LlmConfigError(f"llm.base_url {base_url} is unreachable ({exc})") from None


LOCAL_MODEL_MISSING = (
    "the local model needs llama-cpp-python, which is not installed: run "
    "`make setup-llm` (builds llama.cpp, about 5 minutes), or set "
    "llm.provider to a model server"
)


def build_llm(settings: LlmSettings, check: bool = True, needed: bool = True) -> Any:
    """The configured model: ``LocalLlamaLLM`` or a :class:`RemoteModel`. ``needed=False``:
    no role calls the model in this configuration, so the local model may be absent (it is
    loaded on its first call, which never comes)."""
    if settings.provider == "local":
        if needed and importlib.util.find_spec("llama_cpp") is None:
            raise LlmConfigError(LOCAL_MODEL_MISSING)
        from agents.llm.local import LocalLlamaLLM

        return LocalLlamaLLM(
            model="local/smollm2-135m-instruct",
            model_path=str(settings.model_path) if settings.model_path else None,
            temperature=settings.temperature,
            seed=settings.seed,
            max_tokens=settings.max_tokens,
        )
    api_key = api_key_for(settings)
    if check and settings.base_url:
        _check_reachable(settings.base_url, api_key)
    remote = RemoteModel(
        provider=settings.provider,
        base_url=settings.base_url,
        api_key=api_key,
        temperature=settings.temperature,
        seed=settings.seed,
        max_tokens=settings.max_tokens,
        stream=settings.stream,
    )
    if remote.openai_compatible:
        remote.structured_output = structured_mode(settings, api_key, check)
    return remote


def structured_mode(settings: LlmSettings, api_key: str | None, check: bool = True) -> str:
    """``llm.structured_output``, with ``auto`` resolved: OpenAI's own API takes
    ``json_schema``; a ``base_url`` server is probed once at start (when ``check``)."""
    if settings.structured_output != "auto":
        return settings.structured_output
    if settings.base_url is None or not check:
        return "json_schema"
    from agents.llm.structured_output import probe_structured_output

    return probe_structured_output(settings.base_url, api_key, settings.provider.split("/", 1)[-1])


def api_key_for(settings: LlmSettings) -> str | None:
    """The key from ``llm.api_key_env``. A ``base_url`` server (llama.cpp, vLLM, a local
    Ollama) may need none: it gets the placeholder ``none``; a hosted provider without its key
    is one clear error at start."""
    api_key = os.environ.get(settings.api_key_env) or None
    if api_key is None and settings.base_url:
        return NO_KEY
    if api_key is None and not settings.provider.startswith(KEYLESS_PROVIDERS):
        raise LlmConfigError(
            f"llm.provider {settings.provider!r} needs an API key: set {settings.api_key_env}"
        )
    return api_key
