"""One behaviour suite for every storage backend: embedded Edge, qdrant-client, a real server.

``QdrantClient(path=...)`` stands in for a server here (no Qdrant server installs on these
machines); with ``QDRANT_URL`` set, the same tests also run against that server.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

from storage.kb.embeddings import SparseVec
from storage.qdrant.store import (
    AllOf,
    AnyOf,
    CollectionSpec,
    Match,
    Missing,
    Nearest,
    PointData,
    Rrf,
    Stage,
    StoreError,
)

pytestmark = pytest.mark.integration
SPEC = CollectionSpec(
    dense_dim=4, keyword_indexes=("tiers", "access", "source_id"), integer_indexes=("split_id",)
)
BACKENDS = ["edge", "client-local"] + (["server"] if os.environ.get("QDRANT_URL") else [])


def open_backend(kind: str, path: Path):
    if kind == "edge":
        from storage.qdrant.edge_store import EdgeStore

        return EdgeStore(path)
    from qdrant_client import QdrantClient

    from storage.qdrant.server_store import ServerStore

    if kind == "client-local":
        return ServerStore(client=QdrantClient(path=str(path)))
    return ServerStore(url=os.environ["QDRANT_URL"], api_key=os.environ.get("QDRANT_API_KEY"))


def unit(*values: float) -> list[float]:
    v = np.array(values, dtype=np.float32)
    return (v / np.linalg.norm(v)).tolist()


def point(n: int, dense, payload: dict, sparse=None, tokens=None) -> PointData:
    return PointData(
        id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"p{n}")),
        dense=dense,
        payload={"n": n, **payload},
        sparse=sparse or SparseVec([n], [1.0]),
        tokens=tokens or [dense],
    )


POINTS = [
    point(
        1,
        unit(1, 0, 0, 0),
        {"access": "public", "tiers": ["pro"], "source_id": "a", "split_id": 0},
        SparseVec([1, 7], [1.0, 1.0]),
    ),
    point(
        2,
        unit(0.9, 0.1, 0, 0),
        {"access": "internal", "source_id": "b", "split_id": 0},
        SparseVec([7], [2.0]),
    ),
    point(3, unit(0, 1, 0, 0), {"access": "customer", "tiers": [], "source_id": "c", "split_id": 0}),
    point(
        4,
        unit(0, 0, 1, 0),
        {"access": "public", "source_id": "c", "split_id": 1},
        tokens=[unit(0, 0, 1, 0), unit(1, 0, 0, 0)],
    ),
]


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    backend = open_backend(request.param, tmp_path / "store")
    name = f"t{uuid.uuid4().hex[:8]}"
    backend.create_collection(name, SPEC)
    backend.upsert(name, POINTS)
    backend.test_collection = name
    yield backend
    if request.param == "server":
        backend.delete_collection(name)
    backend.close()


def numbers(records) -> list[int]:
    return sorted(r.payload["n"] for r in records)


def test_count_and_scroll_with_filters(store):
    name = store.test_collection
    assert store.count(name) == 4
    assert numbers(store.scroll(name, Match("access", ("public", "customer")))) == [1, 3, 4]
    # absent and empty lists both count as missing
    assert numbers(store.scroll(name, Missing("tiers"))) == [2, 3, 4]
    tier_basic = AnyOf((Missing("tiers"), Match("tiers", ("basic",))))
    assert numbers(store.scroll(name, tier_basic)) == [2, 3, 4]
    both = AllOf((tier_basic, Match("access", ("public",))))
    assert numbers(store.scroll(name, both)) == [4]


def test_scroll_pages_through_large_collections(store):
    name = store.test_collection
    many = [
        point(100 + i, unit(1, 1, 0, 0), {"access": "public", "source_id": "bulk", "split_id": i})
        for i in range(1100)
    ]
    store.upsert(name, many)
    assert store.count(name, Match("source_id", ("bulk",))) == 1100
    assert len(list(store.scroll(name, Match("source_id", ("bulk",)), fields=["n"]))) == 1100


def test_delete_by_filter_removes_only_matches(store):
    name = store.test_collection
    store.delete(name, Match("access", ("internal",)))
    assert numbers(store.scroll(name)) == [1, 3, 4]


def test_upsert_replaces_by_id(store):
    name = store.test_collection
    changed = point(1, unit(1, 0, 0, 0), {"access": "customer", "source_id": "a", "split_id": 0})
    store.upsert(name, [changed])
    assert store.count(name) == 4
    assert numbers(store.scroll(name, Match("access", ("customer",)))) == [1, 3]


def test_dense_sparse_and_maxsim_queries(store):
    name = store.test_collection
    dense = store.query(name, Stage(Nearest("dense", unit(1, 0, 0, 0)), 2))
    assert [h.payload["n"] for h in dense] == [1, 2]
    sparse = store.query(name, Stage(Nearest("bm25", SparseVec([7], [1.0])), 3))
    assert {h.payload["n"] for h in sparse} == {1, 2}
    late = store.query(
        name,
        Stage(Nearest("tokens", [unit(1, 0, 0, 0)]), 4, (Stage(Nearest("dense", unit(0, 0, 1, 0)), 2),)),
    )
    # MaxSim rescoring of the dense shortlist: point 4 carries an exact token match
    assert late[0].payload["n"] in (1, 4) and 4 in [h.payload["n"] for h in late]


def test_equal_scores_come_back_in_id_order_at_any_cut(store):
    name = store.test_collection
    twins = [point(n, unit(0, 0, 0, 1), {"access": "public"}) for n in range(5, 11)]
    store.upsert(name, twins)
    by_id = sorted(p.id for p in twins)
    for limit in (1, 3, 6):  # six twins: within the margin fetched past every cut
        hits = store.query(name, Stage(Nearest("dense", unit(0, 0, 0, 1)), limit))
        assert [h.id for h in hits] == by_id[:limit]


def test_fusion_respects_filters_in_every_stage(store):
    name = store.test_collection
    plan = Stage(
        Rrf(k=5),
        10,
        (
            Stage(Nearest("dense", unit(1, 0, 0, 0)), 10),
            Stage(Nearest("bm25", SparseVec([7], [1.0])), 10),
            Stage(
                Nearest("tokens", [unit(1, 0, 0, 0)]),
                10,
                (Stage(Nearest("dense", unit(1, 0, 0, 0)), 10),),
            ),
        ),
    )
    unfiltered = [h.payload["n"] for h in store.query(name, plan)]
    assert 2 in unfiltered
    filtered = store.query(name, plan, Match("access", ("public", "customer")))
    assert 2 not in [h.payload["n"] for h in filtered]
    assert filtered and all(h.payload["access"] != "internal" for h in filtered)


def test_data_survives_reopening(tmp_path):
    for kind in ("edge", "client-local"):
        path = tmp_path / kind
        first = open_backend(kind, path)
        first.create_collection("kb", SPEC)
        first.upsert("kb", POINTS)
        first.close()
        second = open_backend(kind, path)
        assert second.has_collection("kb") and second.count("kb") == 4
        second.close()


def test_missing_collection_is_a_clear_error(tmp_path):
    from storage.qdrant.edge_store import EdgeStore

    with EdgeStore(tmp_path) as edge, pytest.raises(StoreError, match="does not exist"):
        edge.count("nothing")


def test_second_process_cannot_open_an_embedded_store(tmp_path):
    from storage.qdrant.edge_store import EdgeStore

    with EdgeStore(tmp_path / "shared") as edge:
        edge.create_collection("kb", SPEC)
        edge.upsert("kb", POINTS)
        code = (
            "import sys; from pathlib import Path; from storage.qdrant.edge_store import EdgeStore\n"
            "from storage.qdrant.store import StoreError\n"
            "try:\n    EdgeStore(Path(sys.argv[1]))\nexcept StoreError as e:\n"
            "    print(e); sys.exit(3)\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path / "shared")],
            capture_output=True,
            text=True,
            cwd=Path(__file__).parents[2],
            timeout=60,
        )
        assert done.returncode == 3, done.stderr
        assert "open in another process" in done.stdout
        assert edge.count("kb") == 4


def test_insert_new_leaves_an_existing_point_as_it_is(store):
    backend, name = store, store.test_collection
    taken = POINTS[0]
    backend.insert_new(
        name,
        [
            PointData(id=taken.id, dense=taken.dense, payload={"n": 99, "claim": "late"}),
            point(9, unit(0, 0, 0, 1), {"claim": "new"}),
        ],
    )
    by_n = {r.payload["n"]: r.payload for r in backend.scroll(name)}
    assert 99 not in by_n and by_n[1]["source_id"] == "a"
    assert by_n[9]["claim"] == "new"


def test_update_if_replaces_only_a_point_that_still_matches(store):
    backend, name = store, store.test_collection
    first = POINTS[0]

    def attempt(rev: str, expected: str) -> None:
        backend.update_if(
            name,
            PointData(id=first.id, dense=first.dense, payload={"n": 1, "rev": rev}),
            Match("rev", (expected,)) if expected else Missing("rev"),
        )

    attempt("r1", "")  # the stored point has no revision yet: applied
    attempt("r2", "stale")  # a writer that read another revision: left as it is
    by_n = {r.payload["n"]: r.payload for r in backend.scroll(name)}
    assert by_n[1]["rev"] == "r1"
    attempt("r2", "r1")
    assert {r.payload["n"]: r.payload for r in backend.scroll(name)}[1]["rev"] == "r2"
    ghost = point(42, unit(0, 0, 0, 1), {"rev": "r1"})
    backend.update_if(name, ghost, Missing("rev"))  # never inserts a point that is not there
    assert 42 not in {r.payload["n"] for r in backend.scroll(name)}


def test_scroll_reads_stored_dense_vectors_back(store):
    by_n = {r.payload["n"]: r for r in store.scroll(store.test_collection, dense=True)}
    assert np.allclose(by_n[2].dense, POINTS[1].dense, atol=1e-6)
    assert all(r.dense is None for r in store.scroll(store.test_collection))


def test_a_keyword_index_added_later_is_used_by_filters_and_adding_it_again_is_a_no_op(store):
    name = store.test_collection
    before = numbers(store.scroll(name, Match("access", ("public", "customer"))))
    store.add_keyword_index(name, "access")
    store.add_keyword_index(name, "access")
    assert numbers(store.scroll(name, Match("access", ("public", "customer")))) == before == [1, 3, 4]
    store.upsert(name, [point(9, unit(1, 0, 0, 0), {"access": "customer", "tiers": None})])
    assert numbers(store.scroll(name, Match("access", ("customer",))))[-1:] == [9]
    assert 9 in numbers(store.scroll(name, Missing("tiers")))  # null counts as missing
