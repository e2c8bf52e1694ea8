"""Build what a turn runs with: the engine (CrewAI's Flow, or AutoGen's GraphFlow /
Selector) around one shared LLM, and the whole :class:`agents.runtime.TurnRuntime`. The role
specs are checked here, at start.

Usage::

    runtime = build_runtime(settings, Path(".supportcrew"), engine="autogen",
                            process="hierarchical")
    engine = build_engine("crewai", llm, "sequential")
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

from agents.roles import ROLES, TASKS
from agents.runtime import ENGINES, PROCESSES, Engine, TurnRuntime, calls_a_model
from config.settings import ConfigError, Settings
from integrations.retriever_loader import load_retriever
from storage.kb.named_values import with_named_values
from storage.memory import MemoryStore
from storage.retrieval.retriever import QdrantRetriever
from tasks.decision import check_models
from tasks.evidence import EvidenceScorer
from tasks.message_kind import load_message_kinds


def check_choice(engine: str, process: str) -> None:
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r}: choose crewai or autogen")
    if process not in PROCESSES:
        raise ValueError(f"process {process!r}: choose sequential or hierarchical")


def check_task_placeholders(tasks_config: dict[str, Any]) -> None:
    """Every ``{placeholder}`` of a task description must be an input the turn provides."""
    from tasks.prompts import task_inputs

    for name, spec in tasks_config.items():
        if (
            not isinstance(spec, dict)
            or not isinstance(spec.get("description"), str)
            or not isinstance(spec.get("expected_output"), str)
        ):
            raise ConfigError(f"tasks.yaml: {name} needs text description and expected_output")
        known = task_inputs(name)
        try:
            used = {
                field
                for _, field, _, _ in string.Formatter().parse(spec["description"])
                if field is not None
            }
        except ValueError as exc:
            raise ConfigError(f"tasks.yaml: {name}.description: {exc}") from None
        unknown = sorted(used - known)
        if unknown:
            raise ConfigError(
                f"tasks.yaml: {name}.description uses unknown placeholder(s) "
                f"{unknown}; this task gets {sorted(known)}"
            )
    missing = [t for t in TASKS if t not in tasks_config]
    if missing:
        raise ConfigError(f"tasks.yaml: missing task(s) {missing}")


def check_agents(agents_config: dict[str, Any]) -> None:
    for name in ROLES:
        spec = agents_config.get(name)
        if not isinstance(spec, dict) or not all(
            isinstance(spec.get(k), str) for k in ("role", "goal", "backstory")
        ):
            raise ConfigError(f"agents.yaml: {name} needs text role, goal and backstory")


def build_engine(name: str, llm: Any, process: str, retrieve_crew: Any = None) -> Engine:
    """The engine that runs a turn: CrewAI's Flow, or AutoGen's GraphFlow / Selector.

    The role specs (``config/agents.yaml``, ``config/tasks.yaml``) are checked here, so a bad
    placeholder fails at start instead of silently disabling a role mid-turn.
    """
    from agents.roles import load_role_specs

    check_choice(name, process)
    specs = load_role_specs()
    check_agents(specs.agents)
    check_task_placeholders(specs.tasks)
    if name == "autogen":
        from agents.autogen.client import BaseLLMChatClient, openai_client
        from agents.autogen.engine import AutoGenEngine
        from agents.llm.remote import RemoteModel

        client = openai_client(llm) if isinstance(llm, RemoteModel) else BaseLLMChatClient(llm)
        return AutoGenEngine(client, specs, process=process)
    from agents.crewai.engine import CrewAIEngine

    return CrewAIEngine(llm, process=process, retrieve_crew=retrieve_crew)


def build_runtime(
    settings: Settings,
    data_dir: Path,
    engine: str | None = None,
    process: str | None = None,
    llm: Any = None,
) -> TurnRuntime:
    """Open the knowledge base and build the chosen engine around one shared LLM. The slot
    rules it applies accept the values the knowledge base's pages name as well as those the
    configuration lists (``storage.kb.named_values``)."""
    from agents.llm.factory import build_llm

    engine_name = engine or settings.engine
    process_name = process or settings.process
    check_choice(engine_name, process_name)  # before anything is opened
    check_models(settings.evidence)  # the fitted decision weighs features that exist
    local = QdrantRetriever(settings=settings, data_dir=data_dir)
    local.connect(settings)
    kb = local.kb
    assert kb is not None
    retriever: Any = local
    try:
        if settings.vector_store.type == "qdrant":
            kb.require_documents()
            # read once at start: on a large KB it would otherwise eat the first turn's deadline
            kb.term_statistics()
        else:  # the custom-service client or a user's class; memory stays in our store
            retriever = load_retriever(settings, data_dir)
        llm = llm or build_llm(settings.llm, needed=calls_a_model(settings, process_name))
        chosen = build_engine(engine_name, llm, process_name)
    except Exception:
        local.close()
        raise
    # a team's own plan names (tiers its pages name) are accepted like the listed ones
    settings = with_named_values(settings, kb)
    kb.settings = settings
    memory = MemoryStore(kb.store, kb.encoders, settings.slots)
    memory.ensure()  # collections are made at start, never by a request
    scorer = EvidenceScorer(
        kb.encoders, settings.evidence, kb.term_statistics if retriever is local else None
    )
    # loaded at start: a cold model would eat the first turn's evidence reserve
    scorer.warm_up()
    load_message_kinds(kb.encoders)
    return TurnRuntime(
        settings=settings,
        retriever=retriever,
        engine=chosen,
        scorer=scorer,
        memory=memory,
        kb=kb,
        llm=llm,
    )
