"""Pick the retriever named by ``vector_store.type``: ``qdrant`` or a user's class by module path.

A user's class must follow Rasa's custom information retrieval interface: constructed as
``Class(embeddings=...)``, with ``connect(config)`` and ``async search(query, tracker_state,
threshold)``.

Usage::

    retriever = load_retriever(settings, data_dir)   # connected, ready to search_queries
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any

from config.settings import ConfigError, Settings
from integrations.rasa_interface import RasaInterfaceRetriever
from storage.retrieval.protocol import Retriever
from storage.retrieval.retriever import QdrantRetriever


def retriever_class(type_name: str) -> type:
    """Resolve ``qdrant`` or ``package.module.Class``; ConfigError names what is wrong."""
    if type_name == "qdrant":
        return QdrantRetriever
    if type_name == "custom_service":
        from integrations.custom_service import CustomServiceRetriever

        return CustomServiceRetriever
    module_name, _, class_name = type_name.rpartition(".")
    if not module_name or not class_name:
        raise ConfigError(
            f"vector_store.type: {type_name!r} is neither 'qdrant' nor a module.path.ClassName"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"vector_store.type: cannot import module {module_name!r} ({exc})") from None
    cls: Any = getattr(module, class_name, None)
    if not inspect.isclass(cls):
        raise ConfigError(f"vector_store.type: {module_name!r} has no class {class_name!r}")
    missing = [name for name in ("connect", "search") if not callable(getattr(cls, name, None))]
    if missing:
        raise ConfigError(f"vector_store.type: {type_name} does not implement {', '.join(missing)}")
    if not inspect.iscoroutinefunction(getattr(cls, "search", None)):
        raise ConfigError(f"vector_store.type: {type_name}.search must be `async def`")
    return cls


def load_retriever(settings: Settings, data_dir: Path) -> Retriever:
    """Construct and connect the configured retriever (a user's class adapted to the crew)."""
    cls = retriever_class(settings.vector_store.type)
    if cls is QdrantRetriever:
        retriever = QdrantRetriever(settings=settings, data_dir=data_dir)
        retriever.connect(settings)
        return retriever
    if settings.vector_store.type == "custom_service":
        service = cls(top_k=settings.retrieval.top_k)
        service.connect(settings.vector_store)
        return service
    adapted = RasaInterfaceRetriever(cls(embeddings=None), top_k=settings.retrieval.top_k)
    adapted.connect(settings.vector_store)
    return adapted
