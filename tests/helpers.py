"""Small helpers shared by tests that run real servers on loopback."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def running_server(app: Any) -> Iterator[tuple[str, Any]]:
    """Serve ``app`` with uvicorn on a free loopback port; yields (base url, server)."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started and time.time() < deadline:
        time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}", server
    finally:
        server.should_exit = True
        thread.join(timeout=10)


REFUND = ("Once a refund is approved, the money is returned to the original payment method "
          "within 5 to 7 business days.")


def answering_llm(**more: Any) -> Any:
    """The scripted test double judging 'sufficient' and drafting the refund sentence."""
    from tests.scripted_llm import ScriptedLLM

    replies = {"Judgement": [{"verdict": "sufficient", "reason": "ok"}],
               "DraftAnswer": [{"answer": REFUND, "passage_ids": [1], "handoff": False}],
               **more}
    return ScriptedLLM(model="scripted").script(**replies)


def scripted_runtime(settings: Any, kb: Any, llm: Any, memory_store: Any = None,
                     engine: str = "crewai", process: str = "sequential") -> Any:
    """A TurnRuntime over a real knowledge base, with ``llm`` (a test double) in the roles."""
    from agents.runtime import TurnRuntime, build_engine
    from storage.memory import MemoryStore
    from storage.retrieval import QdrantRetriever
    from tasks.evidence import EvidenceScorer

    memory = MemoryStore(memory_store, kb.encoders) if memory_store is not None else None
    return TurnRuntime(settings, QdrantRetriever(kb=kb),
                       build_engine(engine, llm, process),
                       EvidenceScorer(kb.encoders, settings.evidence), memory)


def with_api_keys(settings: Any, *keys: Any) -> Any:
    """Settings whose pilot accepts exactly ``keys``."""
    return settings.model_copy(update={"pilot": settings.pilot.model_copy(
        update={"api_keys": list(keys)})})
