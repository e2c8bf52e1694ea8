"""Runs the terminal chat in a pseudo-terminal for tests, with the scripted LLM test double.

    python -m tests.chat_harness DATA_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

from config.settings import load_settings
from storage.kb.ingest import ingest_paths
from storage.kb.knowledge_base import KnowledgeBase
from terminal.chat import ChatLoop
from tests.conftest import EXAMPLE_KB
from tests.helpers import answering_llm, scripted_runtime


def main(data_dir: Path) -> None:
    settings = load_settings()
    kb = KnowledgeBase.open(settings, data_dir)
    ingest_paths(kb, [EXAMPLE_KB])
    runtime = scripted_runtime(settings, kb, answering_llm(), memory_store=kb.store)
    try:
        ChatLoop(runtime, "c-chat", {"tier": "basic", "access_level": "customer"},
                 history_file=data_dir / "history").run()
    finally:
        runtime.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
