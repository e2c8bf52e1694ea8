"""Open the store the configuration names: a Qdrant server when a URL is given, else embedded.

Usage::

    store = open_store(settings.qdrant.url, data_dir / "qdrant", settings.qdrant.api_key)
"""

from __future__ import annotations

from pathlib import Path

from storage.qdrant.store import Store


def open_store(url: str | None, path: Path, api_key: str | None = None) -> Store:
    """Open the server backend when ``url`` is given, else the embedded one at ``path``."""
    if url:
        from storage.qdrant.server_store import ServerStore

        return ServerStore(url=url, api_key=api_key)
    from storage.qdrant.edge_store import EdgeStore

    return EdgeStore(path)
