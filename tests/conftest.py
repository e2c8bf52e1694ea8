"""Shared fixtures: settings, a temporary data dir, and the example knowledge base ingested once."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from config.settings import Settings, load_settings
from config.telemetry import apply_telemetry_policy

apply_telemetry_policy()
# an xdist worker inherits COLUMNS from the controller's terminal: a CLI's rich console would
# freeze that width at import, where a test's own COLUMNS could no longer widen it
for _size in ("COLUMNS", "LINES"):
    os.environ.pop(_size, None)

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_KB = REPO / "examples" / "kb"


@pytest.fixture(autouse=True)
def _clean_supportcrew_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("SUPPORTCREW_") and name != "SUPPORTCREW_MODELS_DIR":
            monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def settings() -> Settings:
    return load_settings()


@pytest.fixture(scope="session")
def kb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("supportcrew-kb")


@pytest.fixture(scope="session")
def example_kb(settings: Settings, kb_dir: Path) -> Iterator:
    """The bundled example knowledge base in a fresh embedded store (read-only for tests)."""
    from storage.kb.ingest import ingest_paths
    from storage.kb.knowledge_base import KnowledgeBase

    kb = KnowledgeBase.open(settings, kb_dir)
    report = ingest_paths(kb, [EXAMPLE_KB])
    assert not report.skipped, report.skipped
    yield kb
    kb.close()


@pytest.fixture
def memory(tmp_path: Path, example_kb) -> Iterator:
    """Customer memory over its own embedded store (the example KB's encoders)."""
    from storage.memory import MemoryStore
    from storage.qdrant.edge_store import EdgeStore

    store = EdgeStore(tmp_path / "memory")
    yield MemoryStore(store, example_kb.encoders)
    store.close()
