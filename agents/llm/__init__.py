"""The chat models: the embedded SmolLM2 (llama-cpp-python) and OpenAI-compatible servers.

Usage::

    from agents.llm.factory import build_llm
    llm = build_llm(settings.llm)
"""
