"""Everything a turn needs, built once per process: settings, retriever, engine, evidence.

Usage::

    runtime = build_runtime(settings, Path(".supportcrew"), process="hierarchical")
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from config.settings import LlmSettings, Settings
from storage.knowledge_base import KnowledgeBase
from storage.memory import MemoryStore
from storage.retrieval import QdrantRetriever
from tasks.evidence import EvidenceScorer


@dataclass
class TurnRuntime:
    settings: Settings
    retriever: QdrantRetriever
    engine: Any
    scorer: EvidenceScorer
    memory: MemoryStore | None = None
    kb: KnowledgeBase | None = None

    def knowledge_base(self) -> KnowledgeBase:
        """The Qdrant knowledge base (also when retrieval goes to a custom service)."""
        return self.kb if self.kb is not None else self.retriever.kb

    def close(self) -> None:
        self.retriever.close()
        if self.kb is not None:
            self.kb.close()


def build_engine(name: str, llm: Any, specs: Any, process: str,
                 llm_settings: LlmSettings | None = None) -> Any:
    """The role engine: CrewAI, or AutoGen (the local backend, or autogen-ext's OpenAI client
    for remote endpoints)."""
    if name == "autogen":
        from agents.autogen_client import BaseLLMChatClient, openai_client
        from agents.autogen_engine import AutoGenEngine

        remote = llm_settings is not None and llm_settings.provider != "local" and not getattr(
            llm, "records_usage", False)
        client = openai_client(llm_settings) if remote else BaseLLMChatClient(llm)
        return AutoGenEngine(client, specs, process=process)
    from agents.crewai_engine import CrewAIEngine

    return CrewAIEngine(llm, specs, process=process)


def build_runtime(settings: Settings, data_dir: Path, engine: str | None = None,
                  process: str | None = None, llm: Any = None) -> TurnRuntime:
    """Open the knowledge base and build the chosen engine around one shared LLM."""
    from agents.llm_factory import build_llm
    from agents.roles import load_role_specs

    engine_name = engine or settings.engine
    if engine_name not in ("crewai", "autogen"):
        raise ValueError(f"engine {engine_name!r}: choose crewai or autogen")
    local = QdrantRetriever(settings=settings, data_dir=data_dir)
    local.connect(settings)
    kb = local.kb
    assert kb is not None
    retriever: Any = local
    if settings.vector_store.type == "custom_service":
        from storage.custom_service import CustomServiceRetriever

        retriever = CustomServiceRetriever(top_k=settings.retrieval.top_k)
        retriever.connect(settings.vector_store)
    elif settings.vector_store.type != "qdrant":
        local.close()
        raise ValueError("vector_store.type: the crew runs on 'qdrant' or 'custom_service'; "
                         "other retriever classes serve Rasa (storage.rasa_adapter)")
    else:
        try:
            kb.require_documents()
        except ValueError:
            local.close()
            raise
    scorer = EvidenceScorer(kb.encoders, settings.evidence)
    chosen = build_engine(engine_name, llm or build_llm(settings.llm), load_role_specs(),
                          process or settings.process, settings.llm)
    return TurnRuntime(settings=settings, retriever=retriever, engine=chosen, scorer=scorer,
                       memory=MemoryStore(kb.store, kb.encoders), kb=kb)
