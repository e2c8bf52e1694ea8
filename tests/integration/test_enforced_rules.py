"""The enforced slot rules answered in Python (``admits``: may a caller read a document
before it is stored; ``document_fields``: the fields a record written for a caller's reach
carries) agree with the filter Qdrant applies (``build_filters``), on any payload and slots."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from config.settings import load_settings
from storage.qdrant.edge_store import EdgeStore
from storage.qdrant.store import PointData, ensure_records
from storage.retrieval.filters import DRAFT, admits, build_filters, document_fields

pytestmark = pytest.mark.integration
RULES = load_settings().slots
LEVELS = ["public", "customer", "internal"]
TIERS = ["basic", "pro", "enterprise"]
COLLECTION = "rules"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    opened = EdgeStore(tmp_path_factory.mktemp("rules"))
    ensure_records(opened, COLLECTION, 4, ("access", "tiers", "tenant", "customer_id", DRAFT))
    yield opened
    opened.close()


def maybe(values: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(st.none(), values)


payloads = st.fixed_dictionaries(
    {},
    optional={
        "access": st.sampled_from(LEVELS),
        "tiers": st.lists(st.sampled_from(TIERS), max_size=2, unique=True),
        "tenant": st.sampled_from(["acme", "globex"]),
        "customer_id": st.sampled_from(["c-1", "c-2"]),
        DRAFT: st.sampled_from(["d-1", "d-2"]),
    },
)
slot_sets = st.fixed_dictionaries(
    {},
    optional={
        "access_level": st.sampled_from(LEVELS),
        "tier": st.sampled_from(TIERS),
        "tenant": st.sampled_from(["acme", "globex"]),
        "customer_id": st.sampled_from(["c-1", "c-2"]),
        DRAFT: st.sampled_from(["d-1", "d-2"]),
    },
)


def stored_and_found(store, payload: dict, slots: dict) -> bool:
    store.upsert(
        COLLECTION,
        [PointData(id="00000000-0000-0000-0000-000000000001", dense=[1.0, 0, 0, 0], payload=payload)],
    )
    return bool(list(store.scroll(COLLECTION, build_filters(RULES, slots).enforced)))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=payloads, slots=slot_sets)
def test_admits_says_what_the_store_filter_shows(store, payload, slots):
    assert (admits(RULES, slots, payload) == []) == stored_and_found(store, payload, slots)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(slots=slot_sets, reader=slot_sets)
def test_a_record_written_for_a_reach_is_read_by_those_that_reach_as_far(store, slots, reader):
    slots.pop(DRAFT, None)
    payload = document_fields(RULES, slots)
    assert stored_and_found(store, payload, slots)  # its own reach reads it
    assert (admits(RULES, reader, payload) == []) == stored_and_found(store, payload, reader)
