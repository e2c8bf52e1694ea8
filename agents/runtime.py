"""What a turn runs with, built once per process (``agents/build.py``): settings, retriever,
evidence scorer, memory and the engine. The engines take a :class:`TurnRuntime`; the module
that builds them is another, so they import this one without a cycle.

Nothing here holds turn-scoped state: each turn gets its own ``TurnState`` and its own
Flow or team (``agents/turn.py``), so concurrent turns of different customers never mix.

Usage::

    runtime = build_runtime(settings, Path(".supportcrew"))   # from agents.build
    runtime.engine.run(state, runtime)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from config.settings import ROLE_NAMES, Settings
from storage.kb.knowledge_base import KnowledgeBase
from storage.memory import MemoryStore
from storage.retrieval.protocol import Retriever
from tasks.evidence import EvidenceScorer
from tasks.gates import model_role
from tasks.state import TurnState

ENGINES = ("crewai", "autogen")
PROCESSES = ("sequential", "hierarchical")


def calls_a_model(settings: Settings, process: str) -> bool:
    """Whether turns of this configuration may call the model: a role on its model path, or
    a hierarchical manager that is the model (``manager:``; the step table's policy is not).

    >>> from config.settings import Settings
    >>> calls_a_model(Settings(), "hierarchical")
    False
    >>> calls_a_model(Settings(manager="model"), "hierarchical")
    True
    """
    manager = process == "hierarchical" and settings.model_manages()
    return manager or any(model_role(settings, role) for role in ROLE_NAMES)


class Engine(Protocol):
    """What runs a turn: ``CrewAIEngine`` and ``AutoGenEngine`` (subclass either to add agents)."""

    name: str
    process: str

    def run(self, state: TurnState, runtime: TurnRuntime) -> TurnState: ...


@dataclass
class TurnRuntime:
    settings: Settings
    retriever: Retriever
    engine: Engine
    scorer: EvidenceScorer
    memory: MemoryStore | None = None
    kb: KnowledgeBase | None = None
    # the model the engine's roles share (as ``build_llm`` gave it), for a call outside a
    # turn (the lead's article draft, ``service/domain/model_draft.py``)
    llm: Any = None

    def knowledge_base(self) -> KnowledgeBase:
        """The Qdrant knowledge base (also when retrieval goes to a custom service)."""
        kb = self.kb if self.kb is not None else getattr(self.retriever, "kb", None)
        if kb is None:
            raise RuntimeError("this runtime has no Qdrant knowledge base")
        return kb

    def close(self) -> None:
        self.retriever.close()
        if self.kb is not None:
            self.kb.close()
