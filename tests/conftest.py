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


def _one_onnx_thread_per_worker() -> None:
    """pytest-xdist's workers share the machine's cores: each ONNX Runtime session a worker
    opens (MiniLM, the cross-encoder) gets one intra-op thread, not one per core, or 3
    workers on 2 cores keep 6 spinning threads and the parallel stage takes 1.4 times as
    long. The settings are not touched: their own tests read thread counts."""
    import onnxruntime

    opened = onnxruntime.InferenceSession.__init__

    def one_thread(session, model, sess_options=None, *args, **kwargs):  # type: ignore[no-untyped-def]
        options = sess_options or onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        opened(session, model, options, *args, **kwargs)

    onnxruntime.InferenceSession.__init__ = one_thread  # type: ignore[method-assign]


if os.environ.get("PYTEST_XDIST_WORKER"):
    _one_onnx_thread_per_worker()

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
    from tests.example_encodings import ExampleEncodings

    kb = KnowledgeBase.open(settings, kb_dir)
    known = ExampleEncodings.install(kb.encoders.dense)
    report = ingest_paths(kb, [EXAMPLE_KB])
    known.freeze()  # the tests' own stores ingest examples/kb again: its chunks come from here
    assert not report.skipped, report.skipped
    assert len(known) > 0
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
