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
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as qe

from storage.qdrant.base_store import SCROLL_PAGE, BaseStore, IndexKind, PageReader
from storage.qdrant.store import CollectionSpec, SparseVec, Stage, StoreError
from storage.qdrant.translate import FilterDialect

_DATATYPES = {"float32": qe.VectorStorageDatatype.Float32, "float16": qe.VectorStorageDatatype.Float16}
_INDEX_TYPES = {"keyword": qe.PayloadSchemaType.Keyword, "integer": qe.PayloadSchemaType.Integer}


EDGE_DIALECT = FilterDialect(
    must=lambda conditions: qe.Filter(must=conditions),
    should=lambda conditions: qe.Filter(should=conditions),
    match_one=lambda key, value: qe.FieldCondition(key=key, match=qe.MatchValue(value)),
    match_any=lambda key, values: qe.FieldCondition(key=key, match=qe.MatchAny(list(values))),
    is_empty=qe.IsEmptyCondition,
)


class EdgeStore(BaseStore):
    """The embedded store. ``path`` holds one directory per collection and a lock file."""

    ONE_PROCESS = True
    DIALECT = EDGE_DIALECT
    INSERT_ONLY = qe.UpdateMode.InsertOnly
    UPDATE_ONLY = qe.UpdateMode.UpdateOnly

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

    def _guarded(self) -> threading.RLock:
        return self._guard

    def _create(self, name: str, spec: CollectionSpec) -> None:
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
        self._shards[name] = qe.EdgeShard.create(
            str(self._dir(name)), qe.EdgeConfig(vectors=vectors, sparse_vectors=sparse)
        )

    def delete_collection(self, name: str) -> None:
        with self._guard:
            shard = self._shards.pop(name, None)
            if shard is not None:
                shard.close()
            shutil.rmtree(self._dir(name), ignore_errors=True)

    def _index(self, name: str, key: str, kind: IndexKind) -> None:
        self._shard(name).update(qe.UpdateOperation.create_field_index(key, _INDEX_TYPES[kind]))

    def _indexed(self, name: str) -> dict[str, Any]:
        return dict(self._shard(name).info().payload_schema)

    # -- points ---------------------------------------------------------------------------
    def _vector(self, values: Any) -> Any:
        # numpy arrays go to the engine as they are: no Python float lists in between
        return np.asarray(values, dtype=np.float32)

    def _sparse(self, vector: SparseVec) -> qe.SparseVector:
        return qe.SparseVector(list(vector.indices), list(vector.values))

    def _point(self, point_id: str, vector: dict[str, Any], payload: dict[str, Any]) -> qe.Point:
        return qe.Point(point_id, vector, payload)

    def _upsert(self, name: str, points: list[Any], mode: Any, condition: Any) -> None:
        self._shard(name).update(
            qe.UpdateOperation.upsert_points(points, condition=condition, update_mode=mode)
        )

    def _delete(self, name: str, where: Any) -> None:
        assert where is not None  # a condition always translates to a filter
        self._shard(name).update(qe.UpdateOperation.delete_points_by_filter(where))

    def _pages(self, name: str, where: Any, fields: list[str] | None, dense: bool) -> PageReader:
        shard = self._shard(name)
        with_payload: Any = qe.PayloadSelector.Include(fields) if fields else True

        def read(offset: Any) -> tuple[Any, Any]:
            request = qe.ScrollRequest(
                offset=offset,
                limit=SCROLL_PAGE,
                filter=where,
                with_payload=with_payload,
                with_vector=["dense"] if dense else False,
            )
            return shard.scroll(request)  # type: ignore[no-any-return]

        return read

    def _count(self, name: str, where: Any) -> int:
        return self._shard(name).count(qe.CountRequest(filter=where, exact=True))

    def _fusion(self, k: int, weights: list[float] | None) -> Any:
        return qe.Fusion.Rrf(k=k, weights=weights)

    def _nearest(self, vector: Any, using: str) -> Any:
        return qe.Query.Nearest(vector, using=using)

    def _prefetch(self, stage: Stage, query: Any, where: Any, nested: list[Any] | None) -> qe.Prefetch:
        return qe.Prefetch(limit=stage.limit, query=query, prefetches=nested, filter=where)

    def _query(
        self, name: str, query: Any, prefetch: list[Any] | None, where: Any, limit: int
    ) -> list[Any]:
        request = qe.QueryRequest(
            limit=limit,
            query=query,
            prefetches=prefetch,
            filter=where,
            with_payload=True,
            with_vector=False,
        )
        return list(self._shard(name).query(request))

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
