"""Server backend: a Qdrant server or cluster through qdrant-client.

In tests ``ServerStore(client=QdrantClient(path=...))`` stands in for a server (qdrant-client's
local mode); with ``QDRANT_URL`` set the same behaviour suite runs against a real server.

Usage::

    store = ServerStore(url="http://localhost:6333", api_key=os.environ["QDRANT_API_KEY"])
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from qdrant_client import QdrantClient, models

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
_DATATYPES = {"float32": models.Datatype.FLOAT32, "float16": models.Datatype.FLOAT16}


CLIENT_DIALECT = FilterDialect(
    must=lambda conditions: models.Filter(must=conditions),
    should=lambda conditions: models.Filter(should=conditions),
    match_one=lambda key, value: models.FieldCondition(key=key, match=models.MatchValue(value=value)),
    match_any=lambda key, values: models.FieldCondition(
        key=key, match=models.MatchAny(any=list(values))
    ),
    is_empty=lambda key: models.IsEmptyCondition(is_empty=models.PayloadField(key=key)),
)


def to_client_filter(condition: Condition | None) -> models.Filter | None:
    """Translate a storage condition into a qdrant-client Filter."""
    return translate_filter(condition, CLIENT_DIALECT)


def _as_query(query: Nearest | Rrf) -> tuple[Any, str | None]:
    if isinstance(query, Rrf):
        weights = list(query.weights) if query.weights else None
        return models.RrfQuery(rrf=models.Rrf(k=query.k, weights=weights)), None
    vector = query.vector
    if query.using == "bm25":
        vector = models.SparseVector(indices=list(vector.indices), values=list(vector.values))
    elif hasattr(vector, "tolist"):
        vector = vector.tolist()
    return vector, query.using


def _as_prefetch(stage: Stage, where: models.Filter | None) -> models.Prefetch:
    query, using = _as_query(stage.query)
    return models.Prefetch(
        query=query,
        using=using,
        limit=stage.limit,
        filter=where,
        prefetch=[_as_prefetch(p, where) for p in stage.prefetch] or None,
    )


def _plain(value: Any) -> Any:
    return value.tolist() if hasattr(value, "tolist") else value


class ServerStore:
    """The store on a Qdrant server (or any ``QdrantClient``)."""

    def __init__(
        self, url: str | None = None, api_key: str | None = None, client: QdrantClient | None = None
    ) -> None:
        if client is None:
            if not url:
                raise StoreError("ServerStore needs a url or a client")
            client = QdrantClient(url=url, api_key=api_key, timeout=30)
        self._client = client
        self.url = url

    def check(self) -> None:
        """Raise StoreError when the server cannot be reached (the readiness check)."""
        self.ping()

    def ping(self) -> None:
        """Raise StoreError when the server cannot be reached."""
        try:
            self._client.get_collections()
        except Exception as exc:
            raise StoreError(f"cannot reach Qdrant at {self.url}: {exc}") from None

    def has_collection(self, name: str) -> bool:
        return bool(self._client.collection_exists(name))

    def create_collection(self, name: str, spec: CollectionSpec) -> None:
        vectors = {
            "dense": models.VectorParams(
                size=spec.dense_dim,
                distance=models.Distance.COSINE,
                on_disk=None if spec.dense_in_ram else True,
            )
        }
        if spec.tokens:
            vectors["tokens"] = models.VectorParams(
                size=spec.dense_dim,
                distance=models.Distance.COSINE,
                multivector_config=models.MultiVectorConfig(
                    comparator=models.MultiVectorComparator.MAX_SIM
                ),
                datatype=_DATATYPES[spec.token_datatype],
                hnsw_config=models.HnswConfigDiff(m=0),
            )
        sparse = (
            {"bm25": models.SparseVectorParams(modifier=models.Modifier.IDF)} if spec.sparse else None
        )
        self._client.create_collection(name, vectors_config=vectors, sparse_vectors_config=sparse)
        for key in spec.keyword_indexes:
            self._client.create_payload_index(name, key, models.PayloadSchemaType.KEYWORD)
        for key in spec.integer_indexes:
            self._client.create_payload_index(name, key, models.PayloadSchemaType.INTEGER)

    def delete_collection(self, name: str) -> None:
        self._client.delete_collection(name)

    def add_keyword_index(self, name: str, key: str) -> None:
        if key not in (self._client.get_collection(name).payload_schema or {}):
            self._client.create_payload_index(name, key, models.PayloadSchemaType.KEYWORD)

    def upsert(self, name: str, points: Sequence[PointData]) -> None:
        self._write(name, points, None)

    def insert_new(self, name: str, points: Sequence[PointData]) -> None:
        self._write(name, points, models.UpdateMode.INSERT_ONLY)

    def update_if(self, name: str, point: PointData, where: Condition) -> None:
        self._write(name, [point], models.UpdateMode.UPDATE_ONLY, to_client_filter(where))

    def _write(self, name: str, points: Sequence[PointData], mode: Any, condition: Any = None) -> None:
        if not points:
            return
        structs = []
        for p in points:
            vector: dict[str, Any] = {"dense": _plain(p.dense)}
            if p.sparse is not None:
                vector["bm25"] = models.SparseVector(
                    indices=list(p.sparse.indices), values=list(p.sparse.values)
                )
            if p.tokens is not None:
                vector["tokens"] = _plain(p.tokens)
            structs.append(models.PointStruct(id=p.id, vector=vector, payload=p.payload))
        self._client.upsert(name, points=structs, wait=True, update_mode=mode, update_filter=condition)

    def delete(self, name: str, where: Condition) -> None:
        self._client.delete(
            name, points_selector=models.FilterSelector(filter=to_client_filter(where)), wait=True
        )

    def scroll(
        self,
        name: str,
        where: Condition | None = None,
        fields: Sequence[str] | None = None,
        dense: bool = False,
    ) -> Iterator[Record]:
        offset = None
        while True:
            records, offset = self._client.scroll(
                name,
                scroll_filter=to_client_filter(where),
                limit=_SCROLL_PAGE,
                offset=offset,
                with_payload=list(fields) if fields else True,
                with_vectors=["dense"] if dense else False,
            )
            for r in records:
                yield Record(str(r.id), dict(r.payload or {}), _dense_of(r) if dense else None)
            if offset is None:
                return

    def count(self, name: str, where: Condition | None = None) -> int:
        return self._client.count(name, count_filter=to_client_filter(where), exact=True).count

    def query(self, name: str, stage: Stage, where: Condition | None = None) -> list[Hit]:
        client_filter = to_client_filter(where)
        query, using = _as_query(stage.query)
        response = self._client.query_points(
            name,
            query=query,
            using=using,
            prefetch=[_as_prefetch(p, client_filter) for p in stage.prefetch] or None,
            query_filter=client_filter,
            limit=stage.limit + TIE_MARGIN,
            with_payload=True,
        )
        hits = [Hit(str(p.id), float(p.score), dict(p.payload or {})) for p in response.points]
        return in_stable_order(hits, stage.limit)

    def close(self) -> None:
        self._client.close()


def _dense_of(record: Any) -> np.ndarray | None:
    vectors = record.vector
    found = vectors.get("dense") if isinstance(vectors, dict) else vectors
    return None if found is None else np.asarray(found, dtype=np.float32)
