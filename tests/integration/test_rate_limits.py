"""Per-key limits through the real service: 429 with Retry-After, nothing stored, other keys
unaffected; the counter in Qdrant is exact under concurrent increments."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from config.settings import ApiKey, PilotLimits
from service.auth import hash_key
from storage.memory import Scope
from tests.helpers import examples_over_a_fixture, pilot_over_own_store

pytestmark = pytest.mark.integration
TIGHT = PilotLimits(
    sessions="3/minute",
    handoffs="1/hour",
    message_bytes="120/day",
    turns="3/minute",
    waiting_messages=2,
)
KEYS = [
    ApiKey(name="flood", sha256=hash_key("flood-key"), tenant="acme", trust_customer_id=True),
    ApiKey(name="calm", sha256=hash_key("calm-key"), tenant="acme", trust_customer_id=True),
    # the same name in another tenant: its own counters
    ApiKey(name="flood", sha256=hash_key("globex-flood-key"), tenant="globex"),
]
ASKS_FOR_A_PERSON = "I want to talk to a human agent please"


@pytest.fixture
def pilot(settings, example_kb, tmp_path):
    tight = settings.model_copy(update={"pilot": settings.pilot.model_copy(update={"limits": TIGHT})})
    with (
        pilot_over_own_store(tight, example_kb, tmp_path / "data", *KEYS) as (app, _),
        TestClient(app) as client,
    ):
        yield client, app.state.pilot


def post(client, path, key, **body):
    return client.post(path, json=body, headers={"Authorization": f"Bearer {key}-key"})


def assert_limited(response, limit: str) -> None:
    assert response.status_code == 429, response.json()
    assert int(response.headers["retry-after"]) >= 1
    assert response.json()["error"]["limit"] == limit


def test_new_sessions_per_key_are_limited_and_other_keys_go_on(pilot):
    client, app_pilot = pilot
    made = [post(client, "/v1/sessions", "flood").status_code for _ in range(3)]
    assert made == [201, 201, 201]
    assert_limited(post(client, "/v1/sessions", "flood"), "sessions")
    assert post(client, "/v1/sessions", "calm").status_code == 201
    assert len(app_pilot.store.sessions("acme")) == 4  # the refused one stored nothing
    # from now on this key is refused before its body is read: not even bad JSON is parsed
    again = client.post(
        "/v1/sessions", content=b"{not json", headers={"Authorization": "Bearer flood-key"}
    )
    assert_limited(again, "sessions")


def test_hand_offs_and_message_bytes_are_limited_and_refused_messages_not_stored(pilot):
    client, app_pilot = pilot
    first, second = (
        post(client, "/v1/sessions", "flood", customer_id=f"c-{n}").json()["session_id"]
        for n in range(2)
    )
    assert post(client, f"/v1/sessions/{first}/handoff", "flood").status_code == 200
    assert post(client, f"/v1/sessions/{first}/handoff", "flood").status_code == 200  # again
    assert_limited(post(client, f"/v1/sessions/{second}/handoff", "flood"), "handoffs")
    assert app_pilot.store.session("acme", second)["status"] == "open"

    assert post(client, f"/v1/sessions/{second}/messages", "flood", message="x" * 100).status_code == 200
    assert_limited(
        post(client, f"/v1/sessions/{second}/messages", "flood", message="y" * 40), "message_bytes"
    )
    turns = app_pilot.runtime.memory.session_turns(Scope("c-1", "acme"), second)
    assert [t["user"][0] for t in turns] == ["x"]


def test_messages_waiting_for_a_person_are_capped_per_session(pilot):
    client, app_pilot = pilot
    session = post(client, "/v1/sessions", "calm", customer_id="c-w").json()["session_id"]
    post(client, f"/v1/sessions/{session}/handoff", "calm")
    for text in ("one", "two"):
        assert (
            post(client, f"/v1/sessions/{session}/messages", "calm", message=text).json()["verdict"]
            == "handoff"
        )
    refused = post(client, f"/v1/sessions/{session}/messages", "calm", message="three")
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "too_many_waiting"
    turns = app_pilot.runtime.memory.session_turns(Scope("c-w", "acme"), session)
    assert [t["user"] for t in turns] == ["", "one", "two"]  # the hand-off line, then the two


def test_messages_sent_at_once_to_a_waiting_session_hold_the_cap(pilot):
    from service.auth import Caller
    from service.domain.conversation import wait_for_agent
    from service.errors import ApiError

    client, app_pilot = pilot
    session = post(client, "/v1/sessions", "calm", customer_id="c-race").json()["session_id"]
    post(client, f"/v1/sessions/{session}/handoff", "calm")
    header = app_pilot.store.session("acme", session)
    who = Caller("calm", "acme", trust_customer_id=True)
    at_once = threading.Barrier(8)

    def send(number: int) -> bool:
        at_once.wait()
        try:
            wait_for_agent(app_pilot, who, header, f"message {number}")
        except ApiError as refused:
            assert refused.status == 429 and refused.code == "too_many_waiting"
            return False
        return True

    with ThreadPoolExecutor(8) as pool:
        accepted = sum(pool.map(send, range(8)))
    turns = app_pilot.runtime.memory.session_turns(Scope("c-race", "acme"), session)
    turns = [t for t in turns if t.get("user")]  # not the button's hand-off line
    assert accepted == len(turns) and 1 <= accepted <= TIGHT.waiting_messages


def test_hand_offs_by_the_assistant_count_against_the_keys_limit(pilot, settings):
    client, app_pilot = pilot
    first, second = (
        post(client, "/v1/sessions", "calm", customer_id=f"c-h{n}").json()["session_id"]
        for n in range(2)
    )
    handed = post(client, f"/v1/sessions/{first}/messages", "calm", message=ASKS_FOR_A_PERSON)
    assert handed.json()["verdict"] == "handoff"
    busy = post(client, f"/v1/sessions/{second}/messages", "calm", message=ASKS_FOR_A_PERSON)
    assert busy.status_code == 200, busy.text
    assert busy.json()["verdict"] == "idk" and not busy.json()["handoff"]
    assert busy.json()["answer"] == settings.messages.handoff_busy
    assert [h["session_id"] for h in app_pilot.store.handoffs("acme")] == [first]
    [stored] = app_pilot.runtime.memory.session_turns(Scope("c-h1", "acme"), second)
    assert stored["verdict"] == "idk" and stored["answer"] == settings.messages.handoff_busy
    assert app_pilot.store.session("acme", first)["handoff_reason"].endswith(ASKS_FOR_A_PERSON)


def test_turns_per_key_are_limited(pilot):
    client, app_pilot = pilot
    session = post(client, "/v1/sessions", "calm", customer_id="c-t").json()["session_id"]
    for _ in range(3):
        sent = post(client, f"/v1/sessions/{session}/messages", "calm", message="refund?")
        assert sent.status_code == 200
    assert_limited(post(client, f"/v1/sessions/{session}/messages", "calm", message="again?"), "turns")
    turns = app_pilot.runtime.memory.session_turns(Scope("c-t", "acme"), session)
    assert len(turns) == 3
    # before its body is read from now on
    again = client.post(
        f"/v1/sessions/{session}/messages",
        content=b"{not json",
        headers={"Authorization": "Bearer calm-key"},
    )
    assert_limited(again, "turns")


def test_counters_are_kept_per_tenant_for_keys_of_the_same_name(pilot):
    client, _ = pilot
    for _ in range(3):
        assert post(client, "/v1/sessions", "flood").status_code == 201
    assert_limited(post(client, "/v1/sessions", "flood"), "sessions")
    assert post(client, "/v1/sessions", "globex-flood").status_code == 201


def test_two_keys_of_one_name_in_one_tenant_are_refused_at_start():
    from pydantic import ValidationError

    from config.settings import PilotSettings

    twins = [ApiKey(name="widget", sha256=hash_key(k), tenant="acme") for k in ("a", "b")]
    with pytest.raises(ValidationError, match="two API keys are named 'widget' in tenant 'acme'"):
        PilotSettings(api_keys=twins)
    PilotSettings(api_keys=[twins[0], twins[1].model_copy(update={"tenant": "globex"})])


def test_the_counter_in_qdrant_is_exact_under_concurrent_increments(pilot):
    _, app_pilot = pilot
    counters = app_pilot.limits.limiter.storage
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: counters.incr("probe", 60, 1), range(40)))
    assert counters.get("probe") == 40
    assert counters.get_expiry("probe") > 0


class SharedStore:
    """The embedded store as a store other processes write too (a Qdrant server's): its
    counters compare-and-set instead of trusting what they wrote."""

    one_process = False

    def __init__(self, store) -> None:
        self._store = store

    def __getattr__(self, name: str):
        return getattr(self._store, name)


class CountedStore(SharedStore):
    """The embedded store, its reads and writes counted."""

    one_process = True

    def __init__(self, store) -> None:
        super().__init__(store)
        self.calls: list[str] = []

    def scroll(self, *args, **kwargs):
        self.calls.append("read")
        return self._store.scroll(*args, **kwargs)

    def upsert(self, *args, **kwargs):
        self.calls.append("write")
        return self._store.upsert(*args, **kwargs)


def test_over_the_embedded_store_a_count_is_one_write(pilot):
    from service.stores.rate_limits import QdrantCounters

    _, app_pilot = pilot
    store = CountedStore(app_pilot.limits.limiter.storage.store)
    counters = QdrantCounters(store, app_pilot.runtime.knowledge_base().encoders)
    store.calls.clear()
    assert counters.incr("one-write", 60, 1) == 1
    assert store.calls == ["read", "write"]  # read once: it may have been counted before a restart
    store.calls.clear()
    assert [counters.incr("one-write", 60, 2) for _ in range(3)] == [3, 5, 7]
    assert counters.get("one-write") == 7 and store.calls == ["write"] * 3
    # what was written is what a fresh reader of the store finds
    fresh = QdrantCounters(SharedStore(store._store), app_pilot.runtime.knowledge_base().encoders)
    assert fresh.get("one-write") == 7
    counters.clear("one-write")
    assert counters.get("one-write") == 0 and fresh.get("one-write") == 0


def test_two_workers_counting_one_key_lose_no_increment(pilot):
    """Two counters over a store that other processes write too stand for two workers: only
    their compare-and-set orders them (each queues its own threads), and every increment
    lands."""
    from service.stores.rate_limits import QdrantCounters

    _, app_pilot = pilot
    encoders = app_pilot.runtime.knowledge_base().encoders
    first = QdrantCounters(SharedStore(app_pilot.limits.limiter.storage.store), encoders)
    second = QdrantCounters(SharedStore(first.store._store), encoders)
    with ThreadPoolExecutor(8) as pool:
        counts = list(pool.map(lambda i: (first, second)[i % 2].incr("shared", 60, 1), range(40)))
    assert first.get("shared") == second.get("shared") == 40
    assert sorted(counts) == list(range(1, 41))  # each increment saw its own count


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("sessions", "lots"),
        ("handoffs", "10/fortnight"),
        ("message_bytes", "0/day"),
        ("turns", "many"),
        ("waiting_messages", 0),
    ],
)
def test_a_malformed_limit_is_named(field, value):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=field):
        PilotLimits(**{field: value})


def counter_records(app_pilot) -> int:
    from service.stores.rate_limits import COUNTERS

    return app_pilot.limits.limiter.storage.store.count(COUNTERS)


@examples_over_a_fixture(40)
@given(
    tenant=st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="/?#%"),
        min_size=1,
        max_size=40,
    ).filter(lambda t: t.strip() and t not in (".", "..") and t not in ("acme", "globex")),
    name=st.from_regex(r"[a-z0-9]{1,12}", fullmatch=True),
)
def test_a_keyless_read_of_a_tenant_nobody_serves_is_refused_before_it_is_counted(pilot, tenant, name):
    """A made-up tenant in ``/help/articles/<tenant>/<name>`` used to leave a rate counter
    behind for good (4,000 names from one address: 4,000 records); now it is 404 and
    nothing is stored."""
    from urllib.parse import quote

    client, app_pilot = pilot
    before = counter_records(app_pilot)
    response = client.get(f"/help/articles/{quote(tenant, safe='')}/{name}")
    assert response.status_code == 404, response.text
    assert response.json()["error"]["code"] == "unknown_article"
    assert counter_records(app_pilot) == before


def test_one_address_makes_one_counter_per_served_tenant_and_counters_expire(pilot):
    import time

    client, app_pilot = pilot
    before = counter_records(app_pilot)
    for n in range(30):  # made-up tenants and names, then the served tenants' own
        client.get(f"/help/articles/made-up-{n}/page-{n}")
        client.get(f"/help/articles/acme/page-{n}")
        client.get(f"/help/articles/globex/page-{n}")
    assert counter_records(app_pilot) == before + 2  # acme's and globex's reads, this address
    assert post(client, "/v1/sessions", "flood").status_code == 201
    assert counter_records(app_pilot) == before + 3
    # a day later every window has ended: the minute sweep deletes them all
    app_pilot.limits.forget_expired(time.time() + 2 * 86_400)
    assert counter_records(app_pilot) == 0 and app_pilot.limits.spent_until == {}
    # and a counter stored before counters had an expiry hour goes at the next start's sweep
    from service.stores.rate_limits import COUNTERS

    app_pilot.limits.limiter.hit(app_pilot.limits.items["sessions"], "sessions", "old")
    [record] = app_pilot.limits.counters.store.scroll(COUNTERS)
    record.payload.pop("expires_hour")
    app_pilot.limits.counters.store.upsert(
        COUNTERS, [app_pilot.limits.counters._point(record.payload["key"], record.payload)]
    )
    app_pilot.limits.forget_expired(time.time() + 2 * 86_400, everything=True)
    assert counter_records(app_pilot) == 0
