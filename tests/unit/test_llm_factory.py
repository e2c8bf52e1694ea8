import pytest

from agents.llm.factory import LlmConfigError, build_llm
from config.settings import LlmSettings
from tests.helpers import free_port


def test_missing_api_key_is_one_clear_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LlmConfigError, match="needs an API key: set OPENAI_API_KEY"):
        build_llm(LlmSettings(provider="openai/gpt-4o-mini"))


def test_unreachable_endpoint_is_one_clear_error():
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(LlmConfigError, match="unreachable"):
        build_llm(LlmSettings(provider="openai/local-model", base_url=url))


def test_keyless_providers_and_the_local_model_build(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert build_llm(LlmSettings(provider="ollama/qwen2.5:7b"), check=False).model
    local = build_llm(LlmSettings())
    assert local.records_usage and local.temperature == 0.0


def test_autogen_uses_autogen_ext_for_remote_endpoints(monkeypatch):
    from agents.autogen.client import BaseLLMChatClient
    from agents.build import build_engine

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    remote = LlmSettings(provider="openai/my-model", base_url="http://127.0.0.1:9/v1")
    llm = build_llm(remote, check=False)
    engine = build_engine("autogen", llm, "sequential")
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    assert isinstance(engine.client, OpenAIChatCompletionClient)
    assert engine.client._create_args["max_tokens"] == remote.max_tokens  # both engines get it
    assert llm.max_tokens == remote.max_tokens
    local = build_engine("autogen", build_llm(LlmSettings()), "sequential")
    assert isinstance(local.client, BaseLLMChatClient)


def test_a_server_without_a_key_is_sent_a_placeholder_on_both_engines(monkeypatch):
    from agents.build import build_engine

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    remote = LlmSettings(provider="openai/local-model", base_url="http://127.0.0.1:9/v1")
    llm = build_llm(remote, check=False)  # no "OPENAI_API_KEY is required" at the first call
    assert llm.api_key == "none"
    engine = build_engine("autogen", llm, "sequential")  # no traceback at start
    assert engine.client._client.api_key == "none"


def test_a_missing_local_model_is_one_line_only_where_a_role_needs_it(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "llama_cpp" else real(name, *a)
    )
    with pytest.raises(LlmConfigError, match="make setup-llm"):
        build_llm(LlmSettings())
    assert build_llm(LlmSettings(), needed=False).model  # the shipped defaults call no model
