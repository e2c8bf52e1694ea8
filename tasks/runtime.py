"""Everything a turn needs, built once per process: settings, retriever, engine, evidence.

Usage::

    runtime = build_runtime(settings, Path(".supportcrew"), process="hierarchical")
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from config.settings import Settings
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

    def close(self) -> None:
        self.retriever.close()


def build_runtime(settings: Settings, data_dir: Path, engine: str | None = None,
                  process: str | None = None, llm: Any = None) -> TurnRuntime:
    """Open the knowledge base and build the chosen engine around one shared LLM."""
    from agents.crewai_engine import CrewAIEngine
    from agents.llm_factory import build_llm
    from agents.roles import load_role_specs

    engine_name = engine or settings.engine
    if engine_name != "crewai":
        raise ValueError(f"engine {engine_name!r} is not available yet; use crewai")
    retriever = QdrantRetriever(settings=settings, data_dir=data_dir)
    retriever.connect(settings)
    kb = retriever.kb
    assert kb is not None
    if not kb.exists():
        retriever.close()
        raise ValueError(f"collection {kb.collection!r} is empty; run `python main.py ingest "
                         "examples/kb` first")
    scorer = EvidenceScorer(kb.encoders, settings.evidence.support_semantic,
                            settings.evidence.support_lexical)
    crew = CrewAIEngine(llm or build_llm(settings.llm), load_role_specs(),
                        process=process or settings.process)
    return TurnRuntime(settings=settings, retriever=retriever, engine=crew, scorer=scorer,
                       memory=MemoryStore(kb.store, kb.encoders))
