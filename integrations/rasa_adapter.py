"""Use supportcrew's retriever from Rasa Pro's EnterpriseSearchPolicy.

In ``endpoints.yml``::

    vector_store:
      type: integrations.rasa_adapter.SupportcrewRasaRetriever
      config_file: /path/to/supportcrew/config/assistant.yaml   # optional
      data_dir: /path/to/.supportcrew                            # optional

Rasa constructs the class as ``Class(embeddings=...)``, calls ``connect(EndpointConfig)`` on every
prediction (cheap here after the first call), awaits ``search(query=..., tracker_state=...,
threshold=...)`` and expects its own ``SearchResultList``. When rasa is importable this class
subclasses Rasa's ``InformationRetrieval``, returns Rasa's types and wraps failures in
``InformationRetrievalException``; without rasa it returns supportcrew's identical dataclasses.
rasa is not a dependency of supportcrew.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from storage.retrieval.results import SearchResult as _OwnResult
from storage.retrieval.results import SearchResultList as _OwnList
from storage.retrieval.retriever import QdrantRetriever

try:  # pragma: no cover - exercised only where rasa-pro is installed
    from rasa.core.information_retrieval import (
        InformationRetrieval as _Base,
    )
    from rasa.core.information_retrieval import (
        InformationRetrievalException as _RetrievalError,
    )
    from rasa.core.information_retrieval import SearchResult as _Result
    from rasa.core.information_retrieval import SearchResultList as _List

    RASA_AVAILABLE = True
except ImportError:
    _Base, _Result, _List = object, _OwnResult, _OwnList  # type: ignore[assignment,misc]
    _RetrievalError = RuntimeError  # type: ignore[assignment,misc]
    RASA_AVAILABLE = False

_SHARED: dict[tuple[str | None, str | None], QdrantRetriever] = {}
_SHARED_LOCK = threading.Lock()


def _options(config: Any) -> dict[str, Any]:
    options = getattr(config, "kwargs", None)
    if options is None and isinstance(config, dict):
        options = config
    return dict(options or {})


class SupportcrewRasaRetriever(_Base):  # type: ignore[misc,valid-type]
    """Rasa-facing wrapper; one shared QdrantRetriever per (config_file, data_dir)."""

    def __init__(self, embeddings: Any = None) -> None:
        self.embeddings = embeddings
        self._retriever: QdrantRetriever | None = None

    def connect(self, config: Any) -> None:
        options = _options(config)
        key = (options.get("config_file"), options.get("data_dir"))
        with _SHARED_LOCK:
            retriever = _SHARED.get(key)
            if retriever is None:
                retriever = QdrantRetriever(data_dir=Path(key[1]) if key[1] else None)
                retriever.connect({"config_file": key[0], "data_dir": key[1]})
                _SHARED[key] = retriever
        self._retriever = retriever

    async def search(self, query: str, tracker_state: Any = None, threshold: float = 0.0) -> Any:
        if self._retriever is None:
            raise _RetrievalError() if RASA_AVAILABLE else RuntimeError("connect() first")
        try:
            found = await self._retriever.search(query, tracker_state, threshold)
        except Exception as exc:
            if RASA_AVAILABLE:
                raise _RetrievalError() from exc
            raise
        results = [_Result(text=r.text, metadata=r.metadata, score=r.score) for r in found.results]
        return _List(results=results, metadata=found.metadata)
