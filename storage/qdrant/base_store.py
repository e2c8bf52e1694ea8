"""What the embedded and the server store share: the :class:`storage.qdrant.store.Store` calls
written once over a few hooks that each backend fills in with its own Qdrant library.

The shared half: conditions translated through the backend's ``DIALECT``, points and query
vectors built from the storage dataclasses, writes by mode, the scroll by pages, hits in a
stable order, indexes named by a spec. The backend's half: how a collection is made, how one
page, one point, one query or one count is asked of its library, and how it opens and closes.

Usage::

    class MyStore(BaseStore):
        DIALECT = MY_DIALECT
        INSERT_ONLY, UPDATE_ONLY = lib.INSERT_ONLY, lib.UPDATE_ONLY

        def _point(self, id, vector, payload): return lib.Point(id, vector, payload)
        ...  # the other hooks below
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, ClassVar, Literal

import numpy as np

from storage.qdrant.store import (
    TIE_MARGIN,
    CollectionSpec,
    Condition,
    Hit,
    Nearest,
    PointData,
    Record,
    Rrf,
    SparseVec,
    Stage,
    in_stable_order,
)
from storage.qdrant.translate import FilterDialect, translate_filter

SCROLL_PAGE = 512
IndexKind = Literal["keyword", "integer"]
# one page of a scroll from an offset: the library's records and the next offset (None: done)
PageReader = Callable[[Any], tuple[Sequence[Any], Any]]


def plain(value: Any) -> Any:
    """A numpy array as a Python list; anything else as it is.

    >>> plain(np.array([1.0, 2.0])), plain([3.0])
    ([1.0, 2.0], [3.0])
    """
    return value.tolist() if hasattr(value, "tolist") else value


def dense_of(record: Any) -> np.ndarray | None:
    """The dense vector a library record was read back with, as float32 (None without one)."""
    vectors = record.vector
    found = vectors.get("dense") if isinstance(vectors, dict) else vectors
    return None if found is None else np.asarray(found, dtype=np.float32)


class BaseStore(ABC):
    """The :class:`~storage.qdrant.store.Store` calls both backends answer the same way."""

    DIALECT: ClassVar[FilterDialect]
    ONE_PROCESS: ClassVar[bool] = False  # True where a lock keeps every other process out
    INSERT_ONLY: ClassVar[Any]  # the library's update mode that keeps an existing point
    UPDATE_ONLY: ClassVar[Any]  # the library's update mode that writes only an existing point

    @property
    def one_process(self) -> bool:
        return self.ONE_PROCESS

    def _guarded(self) -> AbstractContextManager[Any]:
        """Held while a collection is made or indexed (the embedded store's lock)."""
        return nullcontext()

    def _filter(self, where: Condition | None) -> Any:
        """``where`` as the library's filter (None stays None)."""
        return translate_filter(where, self.DIALECT)

    # -- collections ---------------------------------------------------------------------
    def create_collection(self, name: str, spec: CollectionSpec) -> None:
        with self._guarded():
            self._create(name, spec)
            for key in spec.keyword_indexes:
                self._index(name, key, "keyword")
            for key in spec.integer_indexes:
                self._index(name, key, "integer")

    def add_keyword_index(self, name: str, key: str) -> None:
        with self._guarded():
            if key not in self._indexed(name):
                self._index(name, key, "keyword")

    # -- points ---------------------------------------------------------------------------
    def upsert(self, name: str, points: Sequence[PointData]) -> None:
        self._write(name, points, None)

    def insert_new(self, name: str, points: Sequence[PointData]) -> None:
        self._write(name, points, self.INSERT_ONLY)

    def update_if(self, name: str, point: PointData, where: Condition) -> None:
        self._write(name, [point], self.UPDATE_ONLY, self._filter(where))

    def _write(self, name: str, points: Sequence[PointData], mode: Any, condition: Any = None) -> None:
        if not points:
            return
        self._upsert(name, [self._point_of(p) for p in points], mode, condition)

    def _point_of(self, point: PointData) -> Any:
        vector: dict[str, Any] = {"dense": self._vector(point.dense)}
        if point.sparse is not None:
            vector["bm25"] = self._sparse(point.sparse)
        if point.tokens is not None:
            vector["tokens"] = self._vector(point.tokens)
        return self._point(point.id, vector, point.payload)

    def delete(self, name: str, where: Condition) -> None:
        self._delete(name, self._filter(where))

    def scroll(
        self,
        name: str,
        where: Condition | None = None,
        fields: Sequence[str] | None = None,
        dense: bool = False,
    ) -> Iterator[Record]:
        read_page = self._pages(name, self._filter(where), list(fields) if fields else None, dense)
        offset = None
        while True:
            records, offset = read_page(offset)
            for r in records:
                yield Record(str(r.id), dict(r.payload or {}), dense_of(r) if dense else None)
            if offset is None:
                return

    def count(self, name: str, where: Condition | None = None) -> int:
        return self._count(name, self._filter(where))

    def query(self, name: str, stage: Stage, where: Condition | None = None) -> list[Hit]:
        native = self._filter(where)
        points = self._query(
            name,
            self._query_of(stage.query),
            self._prefetches(stage.prefetch, native),
            native,
            stage.limit + TIE_MARGIN,
        )
        hits = [Hit(str(p.id), float(p.score), dict(p.payload or {})) for p in points]
        return in_stable_order(hits, stage.limit)

    def _query_of(self, query: Nearest | Rrf) -> Any:
        if isinstance(query, Rrf):
            return self._fusion(query.k, list(query.weights) if query.weights else None)
        vector = self._sparse(query.vector) if query.using == "bm25" else plain(query.vector)
        return self._nearest(vector, query.using)

    def _prefetches(self, stages: Sequence[Stage], where: Any) -> list[Any] | None:
        """The library's prefetches of ``stages`` (nested ones too), each under ``where``."""
        return [
            self._prefetch(s, self._query_of(s.query), where, self._prefetches(s.prefetch, where))
            for s in stages
        ] or None

    # -- the backend's half ---------------------------------------------------------------
    @abstractmethod
    def _create(self, name: str, spec: CollectionSpec) -> None:
        """Make the collection's vectors as ``spec`` says (indexes follow)."""

    @abstractmethod
    def _index(self, name: str, key: str, kind: IndexKind) -> None:
        """Index the payload field ``key``."""

    @abstractmethod
    def _indexed(self, name: str) -> Sequence[str] | dict[str, Any]:
        """The payload fields the collection has indexed."""

    @abstractmethod
    def _vector(self, values: Any) -> Any:
        """A dense vector (or token matrix) as the library takes it."""

    @abstractmethod
    def _sparse(self, vector: SparseVec) -> Any:
        """A sparse vector as the library's type."""

    @abstractmethod
    def _point(self, point_id: str, vector: dict[str, Any], payload: dict[str, Any]) -> Any:
        """One point as the library's type."""

    @abstractmethod
    def _upsert(self, name: str, points: list[Any], mode: Any, condition: Any) -> None:
        """Write ``points`` in ``mode`` (None: upsert), only where ``condition`` holds if given."""

    @abstractmethod
    def _delete(self, name: str, where: Any) -> None:
        """Delete the points matching the library's filter ``where``."""

    @abstractmethod
    def _pages(self, name: str, where: Any, fields: list[str] | None, dense: bool) -> PageReader:
        """A reader of one scroll page from an offset (payload ``fields`` only when given)."""

    @abstractmethod
    def _count(self, name: str, where: Any) -> int:
        """How many points match the library's filter ``where`` (exact)."""

    @abstractmethod
    def _fusion(self, k: int, weights: list[float] | None) -> Any:
        """Reciprocal rank fusion as the library's query."""

    @abstractmethod
    def _nearest(self, vector: Any, using: str) -> Any:
        """Nearest by the named vector ``using``, as the library's query."""

    @abstractmethod
    def _prefetch(self, stage: Stage, query: Any, where: Any, nested: list[Any] | None) -> Any:
        """One prefetch stage as the library's type."""

    @abstractmethod
    def _query(
        self, name: str, query: Any, prefetch: list[Any] | None, where: Any, limit: int
    ) -> Sequence[Any]:
        """The scored points of one query (each with ``id``, ``score`` and ``payload``)."""
