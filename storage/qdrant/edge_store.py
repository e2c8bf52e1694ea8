"""Embedded backend: one qdrant-edge-py ``EdgeShard`` per collection under a data directory.

Only one process may open a data directory at a time; a second one gets a clear
:class:`StoreError` instead of a chance to corrupt the shards. Threads share one store.

Usage::

    store = EdgeStore(Path(".supportcrew/qdrant"))
    store.create_collection("kb", CollectionSpec(dense_dim=384))
"""

from __future__ import annotations

import fcntl
import os
import shutil
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as qe

from storage.qdrant.store import (
    TIE_MARGIN,
    CollectionSpec,
    Condition,
    Hit,
    Nearest,
    PointData,
    Record,
    Rrf,
    Stage,
    StoreError,
    in_stable_order,
)
from storage.qdrant.translate import FilterDialect, translate_filter

_SCROLL_PAGE = 512
_DATATYPES = {"float32": qe.VectorStorageDatatype.Float32, "float16": qe.VectorStorageDatatype.Float16}


EDGE_DIALECT = FilterDialect(
    must=lambda conditions: qe.Filter(must=conditions),
    should=lambda conditions: qe.Filter(should=conditions),
    match_one=lambda key, value: qe.FieldCondition(key=key, match=qe.MatchValue(value)),
    match_any=lambda key, values: qe.FieldCondition(key=key, match=qe.MatchAny(list(values))),
    is_empty=qe.IsEmptyCondition,
)


def to_edge_filter(condition: Condition | None) -> qe.Filter | None:
    """Translate a storage condition into a qdrant_edge Filter."""
    return translate_filter(condition, EDGE_DIALECT)


def _as_query(query: Nearest | Rrf) -> Any:
    if isinstance(query, Rrf):
        weights = list(query.weights) if query.weights else None
        return qe.Fusion.Rrf(k=query.k, weights=weights)
    vector = query.vector
    if query.using == "bm25":
        vector = qe.SparseVector(list(vector.indices), list(vector.values))
    elif hasattr(vector, "tolist"):
        vector = vector.tolist()
    return qe.Query.Nearest(vector, using=query.using)


def _as_prefetch(stage: Stage, where: qe.Filter | None) -> qe.Prefetch:
    return qe.Prefetch(
        limit=stage.limit,
        query=_as_query(stage.query),
        prefetches=[_as_prefetch(p, where) for p in stage.prefetch] or None,
        filter=where,
    )


class EdgeStore:
    """The embedded store. ``path`` holds one directory per collection and a lock file."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self._lock_file = open(self.path / ".lock", "a+")  # noqa: SIM115 - held while open
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock_file.close()
            raise StoreError(
                f"the embedded Qdrant store at {self.path} is open in another process; "
                "stop it first, or point qdrant.url at a Qdrant server to share data"
            ) from None
        self._lock_inode = os.fstat(self._lock_file.fileno()).st_ino
        self._shards: dict[str, qe.EdgeShard] = {}
        self._guard = threading.RLock()

    def check(self) -> None:
        """Raise StoreError unless the directory this store locked is still the one on disk.

        Removed or replaced under a running process, writes would land in deleted files (lost)
        or in a new, unlocked directory; every operation checks first and fails loudly.
        """
        try:
            on_disk = os.stat(self.path / ".lock").st_ino
        except OSError:
            on_disk = None
        if self._lock_file.closed or on_disk != self._lock_inode:
            raise StoreError(
                f"the embedded Qdrant store at {self.path} was removed or replaced "
                "while open; restart the process"
            )

    # -- collections ---------------------------------------------------------------------
    def _dir(self, name: str) -> Path:
        return self.path / name

    def has_collection(self, name: str) -> bool:
        self.check()
        directory = self._dir(name)
        return name in self._shards or (directory.is_dir() and any(directory.iterdir()))

    def _shard(self, name: str) -> qe.EdgeShard:
        self.check()
        with self._guard:
            shard = self._shards.get(name)
            if shard is None:
                if not self.has_collection(name):
                    raise StoreError(f"collection {name!r} does not exist; ingest documents first")
                shard = qe.EdgeShard.load(str(self._dir(name)))
                self._shards[name] = shard
            return shard

    def create_collection(self, name: str, spec: CollectionSpec) -> None:
        vectors = {
            "dense": qe.EdgeVectorParams(
                size=spec.dense_dim,
                distance=qe.Distance.Cosine,
                memory=None if spec.dense_in_ram else qe.Memory.Cold,
            )
        }
        if spec.tokens:
            vectors["tokens"] = qe.EdgeVectorParams(
                size=spec.dense_dim,
                distance=qe.Distance.Cosine,
                multivector_config=qe.MultiVectorConfig(qe.MultiVectorComparator.MaxSim),
                datatype=_DATATYPES[spec.token_datatype],
                # read from disk on demand: only rescored candidates are ever touched
                memory=qe.Memory.Cold,
                # rescoring only: no HNSW graph over a million token vectors
                hnsw_config=qe.HnswIndexConfig(m=0, ef_construct=100, full_scan_threshold=10),
            )
        sparse = {"bm25": qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)} if spec.sparse else None
        self.check()
        with self._guard:
            shard = qe.EdgeShard.create(
                str(self._dir(name)), qe.EdgeConfig(vectors=vectors, sparse_vectors=sparse)
            )
            for key in spec.keyword_indexes:
                shard.update(qe.UpdateOperation.create_field_index(key, qe.PayloadSchemaType.Keyword))
            for key in spec.integer_indexes:
                shard.update(qe.UpdateOperation.create_field_index(key, qe.PayloadSchemaType.Integer))
            self._shards[name] = shard

    def delete_collection(self, name: str) -> None:
        with self._guard:
            shard = self._shards.pop(name, None)
            if shard is not None:
                shard.close()
            shutil.rmtree(self._dir(name), ignore_errors=True)

    def add_keyword_index(self, name: str, key: str) -> None:
        with self._guard:
            shard = self._shard(name)
            if key not in shard.info().payload_schema:
                shard.update(qe.UpdateOperation.create_field_index(key, qe.PayloadSchemaType.Keyword))

    # -- points ---------------------------------------------------------------------------
    def upsert(self, name: str, points: Sequence[PointData]) -> None:
        self._write(name, points, None)

    def insert_new(self, name: str, points: Sequence[PointData]) -> None:
        self._write(name, points, qe.UpdateMode.InsertOnly)

    def update_if(self, name: str, point: PointData, where: Condition) -> None:
        self._write(name, [point], qe.UpdateMode.UpdateOnly, to_edge_filter(where))

    def _write(self, name: str, points: Sequence[PointData], mode: Any, condition: Any = None) -> None:
        if not points:
            return
        edge_points = []
        for p in points:
            # numpy arrays go to the engine as they are: no Python float lists in between
            vector: dict[str, Any] = {"dense": np.asarray(p.dense, dtype=np.float32)}
            if p.sparse is not None:
                vector["bm25"] = qe.SparseVector(list(p.sparse.indices), list(p.sparse.values))
            if p.tokens is not None:
                vector["tokens"] = np.asarray(p.tokens, dtype=np.float32)
            edge_points.append(qe.Point(p.id, vector, p.payload))
        self._shard(name).update(
            qe.UpdateOperation.upsert_points(edge_points, condition=condition, update_mode=mode)
        )

    def delete(self, name: str, where: Condition) -> None:
        edge_filter = to_edge_filter(where)
        assert edge_filter is not None  # a condition always translates to a filter
        self._shard(name).update(qe.UpdateOperation.delete_points_by_filter(edge_filter))

    def scroll(
        self,
        name: str,
        where: Condition | None = None,
        fields: Sequence[str] | None = None,
        dense: bool = False,
    ) -> Iterator[Record]:
        shard = self._shard(name)
        with_payload: Any = qe.PayloadSelector.Include(list(fields)) if fields else True
        offset = None
        while True:
            records, offset = shard.scroll(
                qe.ScrollRequest(
                    offset=offset,
                    limit=_SCROLL_PAGE,
                    filter=to_edge_filter(where),
                    with_payload=with_payload,
                    with_vector=["dense"] if dense else False,
                )
            )
            for r in records:
                yield Record(str(r.id), dict(r.payload or {}), _dense_of(r) if dense else None)
            if offset is None:
                return

    def count(self, name: str, where: Condition | None = None) -> int:
        return self._shard(name).count(qe.CountRequest(filter=to_edge_filter(where), exact=True))

    def query(self, name: str, stage: Stage, where: Condition | None = None) -> list[Hit]:
        edge_filter = to_edge_filter(where)
        request = qe.QueryRequest(
            limit=stage.limit + TIE_MARGIN,
            query=_as_query(stage.query),
            prefetches=[_as_prefetch(p, edge_filter) for p in stage.prefetch] or None,
            filter=edge_filter,
            with_payload=True,
            with_vector=False,
        )
        points = self._shard(name).query(request)
        hits = [Hit(str(p.id), float(p.score), dict(p.payload or {})) for p in points]
        return in_stable_order(hits, stage.limit)

    def close(self) -> None:
        try:
            self.check()
            removed = False
        except StoreError:
            removed = True  # nothing left to flush into; every write since was refused
        with self._guard:
            for shard in self._shards.values():
                if not removed:
                    shard.flush()
                shard.close()
            self._shards.clear()
            if not self._lock_file.closed:
                fcntl.flock(self._lock_file, fcntl.LOCK_UN)
                self._lock_file.close()

    def __enter__(self) -> EdgeStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _dense_of(record: Any) -> np.ndarray | None:
    vectors = record.vector
    found = vectors.get("dense") if isinstance(vectors, dict) else vectors
    return None if found is None else np.asarray(found, dtype=np.float32)
