"""What one search asks a retriever: the phrasings, whose slots, and the options.

Every retriever's ``search_queries`` takes one :class:`RetrievalRequest`; a call names only what
it changes from the defaults (the settings' ``top_k``, ``threshold`` and ``pipeline``; strict
slot names; no advisory filter, entity or page restriction).

``slots`` are the session's slots (tier, access level, tenant, customer id ...): the storage
layer turns the enforced ones into filters on every search (``storage.retrieval.filters``),
present or not; ``advisory`` filters can only narrow, and ``pages`` only narrows within what
the enforced slots show. Nothing in a request can remove or widen an enforced filter.

Usage::

    request = RetrievalRequest(["refund time", "money back"], {"tier": "pro"}, top_k=3)
    found = retriever.search_queries(request)
    deeper = retriever.search_queries(replace(request, top_k=10))   # dataclasses.replace
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class RetrievalRequest:
    """One search: ``queries`` searched at once (fused), under ``slots``.

    ``advisory``: filters a model or a request proposes (they only narrow; one naming an
    enforced slot is ignored and reported). ``threshold``, ``top_k``, ``pipeline``: None
    takes the retriever's configured value. ``strict``: an unknown slot name raises (False
    for slots from a tracker or a session, which carry unrelated ones). ``entities``:
    remembered entities whose chunks join the ranking. ``pages``: only these source ids.
    """

    queries: Sequence[str]
    slots: Mapping[str, Any] = field(default_factory=dict)
    _: KW_ONLY
    advisory: Mapping[str, Any] = field(default_factory=dict)
    threshold: float | None = None
    top_k: int | None = None
    pipeline: str | None = None
    strict: bool = True
    entities: Sequence[str] = ()
    pages: Sequence[str] = ()

    def __post_init__(self) -> None:
        """Copies of the caller's lists and mappings, read-only: a request cannot change after
        it is made (a caller's later edit of its own dict does not reach a search)."""
        if isinstance(self.queries, str):
            raise TypeError("queries: a sequence of texts, not one text")
        for name in ("queries", "entities", "pages"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        for name in ("slots", "advisory"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name) or {})))
