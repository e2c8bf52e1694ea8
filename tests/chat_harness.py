"""Runs the terminal chat in a pseudo-terminal for tests, with the scripted LLM test double.

    python -m tests.chat_harness DATA_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

from agents.roles import load_role_specs
from config.settings import load_settings
from storage.ingest import ingest_paths
from storage.knowledge_base import KnowledgeBase
from storage.memory import MemoryStore
from storage.retrieval import QdrantRetriever
from tasks.evidence import EvidenceScorer
from tasks.runtime import TurnRuntime, build_engine
from terminal.chat import ChatLoop
from tests.conftest import EXAMPLE_KB
from tests.scripted_llm import ScriptedLLM

REFUND = ("Once a refund is approved, the money is returned to the original payment method "
          "within 5 to 7 business days.")


def main(data_dir: Path) -> None:
    settings = load_settings()
    kb = KnowledgeBase.open(settings, data_dir)
    ingest_paths(kb, [EXAMPLE_KB])
    llm = ScriptedLLM(model="scripted").script(
        Judgement=[{"verdict": "sufficient", "reason": "ok"}],
        DraftAnswer=[{"answer": REFUND, "passage_ids": [1], "handoff": False}])
    runtime = TurnRuntime(settings, QdrantRetriever(kb=kb),
                          build_engine("crewai", llm, load_role_specs(), "sequential"),
                          EvidenceScorer(kb.encoders), MemoryStore(kb.store, kb.encoders))
    try:
        ChatLoop(runtime, "c-chat", {"tier": "basic", "access_level": "customer"},
                 history_file=data_dir / "history").run()
    finally:
        runtime.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
