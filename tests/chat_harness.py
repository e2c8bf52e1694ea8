"""Runs the terminal chat in a pseudo-terminal for tests, with the scripted LLM test double.

python -m tests.chat_harness DATA_DIR [--slow]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from config.settings import load_settings
from storage.kb.ingest import ingest_paths
from storage.kb.knowledge_base import KnowledgeBase
from terminal.chat import ChatLoop
from tests.conftest import EXAMPLE_KB
from tests.helpers import answering_llm, scripted_runtime


def slow_draft(_prompt: str) -> dict:
    """A responder that would take two minutes; like local generation, it stops once the
    turn's deadline passes or the customer cancels."""
    from agents.deadline import expired

    for _ in range(1200):
        if expired():
            break
        time.sleep(0.1)
    return {"answer": "too late", "passage_ids": [1]}


def main(data_dir: Path, slow: bool = False) -> None:
    settings = load_settings()
    kb = KnowledgeBase.open(settings, data_dir)
    ingest_paths(kb, [EXAMPLE_KB])
    llm = answering_llm(DraftAnswer=[slow_draft]) if slow else answering_llm()
    if slow:  # no deadline would end the slow turn before the customer cancels it
        settings = settings.model_copy(update={"turn_timeout_s": 600})
    runtime = scripted_runtime(settings, kb, llm, memory_store=kb.store)
    try:
        ChatLoop(
            runtime,
            "c-chat",
            {"tier": "basic", "access_level": "customer"},
            history_file=data_dir / "history",
        ).run()
    finally:
        runtime.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]), slow="--slow" in sys.argv)
