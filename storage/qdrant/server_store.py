"""Server backend: a Qdrant server or cluster through qdrant-client.

In tests ``ServerStore(client=QdrantClient(path=...))`` stands in for a server (qdrant-client's
local mode); with ``QDRANT_URL`` set the same behaviour suite runs against a real server.

Usage::

    store = ServerStore(url="http://localhost:6333", api_key=os.environ["QDRANT_API_KEY"])
"""

from __future__ import annotations

from typing import Any

from qdrant_client import QdrantClient, models

from storage.qdrant.base_store import SCROLL_PAGE, BaseStore, IndexKind, PageReader, plain
from storage.qdrant.store import CollectionSpec, SparseVec, Stage, StoreError
from storage.qdrant.translate import FilterDialect

_DATATYPES = {"float32": models.Datatype.FLOAT32, "float16": models.Datatype.FLOAT16}
_INDEX_TYPES = {"keyword": models.PayloadSchemaType.KEYWORD, "integer": models.PayloadSchemaType.INTEGER}


CLIENT_DIALECT = FilterDialect(
    must=lambda conditions: models.Filter(must=conditions),
    should=lambda conditions: models.Filter(should=conditions),
    match_one=lambda key, value: models.FieldCondition(key=key, match=models.MatchValue(value=value)),
    match_any=lambda key, values: models.FieldCondition(
        key=key, match=models.MatchAny(any=list(values))
    ),
    is_empty=lambda key: models.IsEmptyCondition(is_empty=models.PayloadField(key=key)),
)


class ServerStore(BaseStore):
    """The store on a Qdrant server (or any ``QdrantClient``)."""

    DIALECT = CLIENT_DIALECT
    INSERT_ONLY = models.UpdateMode.INSERT_ONLY
    UPDATE_ONLY = models.UpdateMode.UPDATE_ONLY

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

    def _create(self, name: str, spec: CollectionSpec) -> None:
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

    def delete_collection(self, name: str) -> None:
        self._client.delete_collection(name)

    def _index(self, name: str, key: str, kind: IndexKind) -> None:
        self._client.create_payload_index(name, key, _INDEX_TYPES[kind])

    def _indexed(self, name: str) -> dict[str, Any]:
        return self._client.get_collection(name).payload_schema or {}

    # -- points ---------------------------------------------------------------------------
    def _vector(self, values: Any) -> Any:
        return plain(values)

    def _sparse(self, vector: SparseVec) -> models.SparseVector:
        return models.SparseVector(indices=list(vector.indices), values=list(vector.values))

    def _point(
        self, point_id: str, vector: dict[str, Any], payload: dict[str, Any]
    ) -> models.PointStruct:
        return models.PointStruct(id=point_id, vector=vector, payload=payload)

    def _upsert(self, name: str, points: list[Any], mode: Any, condition: Any) -> None:
        self._client.upsert(name, points=points, wait=True, update_mode=mode, update_filter=condition)

    def _delete(self, name: str, where: Any) -> None:
        self._client.delete(name, points_selector=models.FilterSelector(filter=where), wait=True)

    def _pages(self, name: str, where: Any, fields: list[str] | None, dense: bool) -> PageReader:
        def read(offset: Any) -> tuple[Any, Any]:
            return self._client.scroll(
                name,
                scroll_filter=where,
                limit=SCROLL_PAGE,
                offset=offset,
                with_payload=fields or True,
                with_vectors=["dense"] if dense else False,
            )

        return read

    def _count(self, name: str, where: Any) -> int:
        return self._client.count(name, count_filter=where, exact=True).count

    # a query is the client's (query, using) pair: fusion uses no named vector
    def _fusion(self, k: int, weights: list[float] | None) -> tuple[Any, str | None]:
        return models.RrfQuery(rrf=models.Rrf(k=k, weights=weights)), None

    def _nearest(self, vector: Any, using: str) -> tuple[Any, str | None]:
        return vector, using

    def _prefetch(
        self, stage: Stage, query: Any, where: Any, nested: list[Any] | None
    ) -> models.Prefetch:
        vector, using = query
        return models.Prefetch(
            query=vector, using=using, limit=stage.limit, filter=where, prefetch=nested
        )

    def _query(
        self, name: str, query: Any, prefetch: list[Any] | None, where: Any, limit: int
    ) -> list[Any]:
        vector, using = query
        # the hits come with their payloads (the client's default) and without vectors
        response = self._client.query_points(
            name, vector, using=using, prefetch=prefetch, query_filter=where, limit=limit
        )
        return list(response.points)

    def close(self) -> None:
        self._client.close()
