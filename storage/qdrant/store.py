"""The storage interface every layer above uses; two backends implement it.

* :class:`storage.qdrant.edge_store.EdgeStore`: embedded, qdrant-edge-py (in-process)
* :class:`storage.qdrant.server_store.ServerStore`: a Qdrant server through qdrant-client

``storage.qdrant.backends.open_store`` picks one; this module knows neither.

Nothing above ``storage/`` knows which one is in use. Conditions, queries and points here are
plain dataclasses; each backend translates them to its own Qdrant types.

Usage::

    store = open_store(settings.qdrant.url, data_dir / "qdrant")   # storage.qdrant.backends
    store.create_collection("kb", CollectionSpec(dense_dim=384))
    store.upsert("kb", [PointData(id=..., dense=[...], payload={...})])
    stage = Stage(Nearest("dense", vec), limit=10)
    hits = store.query("kb", stage, where=Match("access", ("public",)))
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from numpy.typing import NDArray


@dataclass(frozen=True)
class SparseVec:
    """A sparse vector as Qdrant stores it."""

    indices: list[int]
    values: list[float]


# ---- conditions --------------------------------------------------------------------------
@dataclass(frozen=True)
class Match:
    """The payload field equals (or, for a list field, contains) any of ``values``."""

    key: str
    values: tuple[str | int | bool, ...]


@dataclass(frozen=True)
class Missing:
    """The payload field is absent, null or an empty list."""

    key: str


@dataclass(frozen=True)
class AllOf:
    conditions: tuple[Condition, ...]


@dataclass(frozen=True)
class AnyOf:
    conditions: tuple[Condition, ...]


Condition = Match | Missing | AllOf | AnyOf


def all_of(*conditions: Condition | None) -> Condition | None:
    """AND the given conditions, dropping Nones; None when nothing is left."""
    kept = tuple(c for c in conditions if c is not None)
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else AllOf(kept)


# ---- collections and points ---------------------------------------------------------------
@dataclass(frozen=True)
class CollectionSpec:
    """Named vectors of a collection: ``dense`` always; ``bm25`` and ``tokens`` optional."""

    dense_dim: int
    sparse: bool = True
    tokens: bool = True
    token_datatype: Literal["float32", "float16"] = "float16"
    keyword_indexes: tuple[str, ...] = ()
    integer_indexes: tuple[str, ...] = ()
    # False: the dense vectors stay on disk, read on demand (a collection that is only
    # filtered and counted, never searched by meaning); True: held in RAM for search. The
    # embedded store holds a collection's in-RAM vectors in 32 MB chunks, read whole when it
    # opens the collection: a record collection opened at start cost 32 MB however few it held.
    dense_in_ram: bool = True


def ensure_records(
    store: Store,
    name: str,
    dense_dim: int,
    keyword_indexes: tuple[str, ...] = (),
    searched: bool = False,
) -> None:
    """A collection of records (a dense vector and a payload filtered on ``keyword_indexes``,
    no BM25 or token vectors), created if it is missing. Its vectors stay on disk unless it is
    ``searched`` by meaning. An existing collection is left unopened (opening one costs memory
    at start): an owner that added an index since adds it with ``add_keyword_index``."""
    if not store.has_collection(name):
        store.create_collection(
            name,
            CollectionSpec(
                dense_dim=dense_dim,
                sparse=False,
                tokens=False,
                keyword_indexes=keyword_indexes,
                dense_in_ram=searched,
            ),
        )


@dataclass
class PointData:
    id: str
    dense: Sequence[float] | NDArray[Any]
    payload: dict[str, Any]
    sparse: SparseVec | None = None
    tokens: Sequence[Sequence[float]] | NDArray[Any] | None = None


@dataclass(frozen=True)
class Record:
    id: str
    payload: dict[str, Any]
    dense: Any = None  # a float32 array, only when scrolled with ``dense=True``


@dataclass(frozen=True)
class Hit:
    id: str
    score: float
    payload: dict[str, Any]


# extra hits a query fetches so that a tie at its cut-off is broken by id, not by the engine
TIE_MARGIN = 8


def in_stable_order(hits: Sequence[Hit], limit: int) -> list[Hit]:
    """``hits`` best first, equal scores by id, the first ``limit``: the engines order equal
    scores differently from one process to the next (fused ranks tie often), and the same
    question must find the same page every time.

    >>> [h.id for h in in_stable_order([Hit("b", 0.5, {}), Hit("a", 0.5, {}), Hit("c", 0.9, {})], 2)]
    ['c', 'a']
    """
    return sorted(hits, key=lambda hit: (-hit.score, hit.id))[:limit]


# ---- queries ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Nearest:
    """Score by one named vector: ``dense`` (list), ``bm25`` (SparseVec) or ``tokens`` (MaxSim)."""

    using: Literal["dense", "bm25", "tokens"]
    vector: Any


@dataclass(frozen=True)
class Rrf:
    """Reciprocal rank fusion of the stage's prefetches."""

    k: int = 60
    weights: tuple[float, ...] | None = None


@dataclass(frozen=True)
class Stage:
    """One query stage: score ``prefetch`` results (or the whole collection) by ``query``."""

    query: Nearest | Rrf
    limit: int
    prefetch: tuple[Stage, ...] = field(default_factory=tuple)


class StoreError(RuntimeError):
    """The storage backend failed or cannot be opened; the message says why."""


class Store(Protocol):
    """What the rest of supportcrew may ask of Qdrant."""

    @property
    def one_process(self) -> bool:
        """Whether this process is the only one that writes the store (the embedded store's
        lock): what it wrote last is what is stored, so it may keep a record in memory."""
        ...

    def has_collection(self, name: str) -> bool: ...
    def create_collection(self, name: str, spec: CollectionSpec) -> None: ...
    def delete_collection(self, name: str) -> None: ...
    def add_keyword_index(self, name: str, key: str) -> None:
        """Index the payload field ``key`` of an existing collection for exact matches (a
        no-op when it is indexed already)."""
        ...

    def upsert(self, name: str, points: Sequence[PointData]) -> None: ...
    def insert_new(self, name: str, points: Sequence[PointData]) -> None:
        """Insert the points whose id is new; a point whose id exists stays as it is (one
        atomic step per point in Qdrant: how workers claim a slot without a lock)."""
        ...

    def update_if(self, name: str, point: PointData, where: Condition) -> None:
        """Replace the stored point only if it exists and matches ``where``, checked and
        written in one atomic step in Qdrant (how workers compare-and-set a record)."""
        ...

    def delete(self, name: str, where: Condition) -> None: ...
    def scroll(
        self,
        name: str,
        where: Condition | None = None,
        fields: Sequence[str] | None = None,
        dense: bool = False,
    ) -> Iterator[Record]:
        """Every point matching ``where``: its payload (only ``fields`` when given) and, with
        ``dense``, its stored dense vector (read back, never recomputed)."""
        ...

    def count(self, name: str, where: Condition | None = None) -> int: ...
    def query(self, name: str, stage: Stage, where: Condition | None = None) -> list[Hit]: ...
    def check(self) -> None: ...
    def close(self) -> None: ...
