"""No lost turns: a turn's index is claimed once, before any work; a late turn finishes only its
own slot; entity writes are bounded and locked per customer, not per process."""

from __future__ import annotations

import threading
import time

import pytest

from storage.memory import MAX_ENTITIES_PER_WRITE, Entity, MemoryStore, Scope
from storage.qdrant.edge_store import EdgeStore
from tests.helpers import scripted_runtime
from tests.integration.test_turn import ask
from tests.scripted_llm import ScriptedLLM

pytestmark = pytest.mark.integration


def test_a_turn_that_passes_its_deadline_in_the_context_step_keeps_its_own_slot(
    settings, example_kb, tmp_path, monkeypatch
):
    store = EdgeStore(tmp_path / "slots")
    runtime = scripted_runtime(
        settings.model_copy(update={"turn_timeout_s": 2.0}),
        example_kb,
        ScriptedLLM(model="scripted"),
        memory_store=store,
        roles="evidence",
    )
    first = ask(runtime, "How long does a refund take?", session="s1")
    assert first.turn_index == 0
    slow_entities = runtime.memory.upsert_entities

    def upsert_slowly(*args, **kwargs):
        time.sleep(3.0)  # past the deadline while the turn is still in its context step
        return slow_entities(*args, **kwargs)

    monkeypatch.setattr(runtime.memory, "upsert_entities", upsert_slowly)
    late = ask(runtime, "Order ORD-55812 never arrived, can I get a refund?", session="s1")
    assert late.turn_index == 1
    time.sleep(1.5)  # the abandoned worker wakes up and stops at its next step
    turns = runtime.memory.session_turns(Scope("c-1"), "s1")
    assert [(t["turn_index"], t["user"], t["status"]) for t in turns] == [
        (0, "How long does a refund take?", "done"),
        (1, "Order ORD-55812 never arrived, can I get a refund?", "done"),
    ]
    store.close()


def test_concurrent_claims_in_one_session_get_distinct_indices(memory):
    scope, claimed = Scope("c-1"), []
    threads = [
        threading.Thread(
            target=lambda n=n: claimed.append(memory.claim_turn(scope, "s1", {"user": f"message {n}"}))
        )
        for n in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(claimed) == list(range(6))
    stored = memory.session_turns(scope, "s1")
    assert sorted(t["user"] for t in stored) == [f"message {n}" for n in range(6)]
    assert {t["status"] for t in stored} == {"pending"}


def test_a_message_naming_hundreds_of_ids_stores_a_bounded_number(memory):
    scope = Scope("c-1")
    memory.upsert_entities(scope, [Entity("order", f"ORD-{n:05d}") for n in range(800)], "s1#0")
    stored = memory.entities(scope)
    assert len(stored) == MAX_ENTITIES_PER_WRITE
    assert {e.value for e in stored} == {f"ORD-{n:05d}" for n in range(MAX_ENTITIES_PER_WRITE)}


def test_one_customers_entity_write_never_waits_for_anothers(memory, monkeypatch):
    encode, release = memory.encoders.dense.encode, threading.Event()

    def blocking_encode(texts, *args, **kwargs):
        if any("ORD-A" in t for t in texts):
            release.wait(20)  # customer A's write is stuck inside its lock
        return encode(texts, *args, **kwargs)

    monkeypatch.setattr(memory.encoders.dense, "encode", blocking_encode)
    memory.ensure()
    stuck = threading.Thread(
        target=memory.upsert_entities, args=(Scope("c-a"), [Entity("order", "ORD-A1")], "sa#0")
    )
    other = threading.Thread(
        target=memory.upsert_entities, args=(Scope("c-b"), [Entity("order", "ORD-B1")], "sb#0")
    )
    stuck.start()
    time.sleep(0.3)
    other.start()
    other.join(10)
    finished_while_a_was_stuck = not other.is_alive()
    release.set()
    stuck.join(20)
    other.join(20)
    assert finished_while_a_was_stuck
    assert [e.value for e in memory.entities(Scope("c-b"))] == ["ORD-B1"]
    assert [e.value for e in memory.entities(Scope("c-a"))] == ["ORD-A1"]


def test_a_stream_that_disconnects_keeps_the_session_locked_until_its_turn_ends(
    settings, example_kb, tmp_path
):
    import asyncio

    from service.auth import Caller
    from service.context import PilotContext
    from service.domain.conversation import start_turn
    from service.domain.turn_http import turn_events
    from tasks.schemas import TurnRequest
    from tests.helpers import REFUND

    def slow_draft(_prompt: str) -> dict:
        time.sleep(1.5)
        return {"answer": REFUND, "passage_ids": [1], "handoff": False}

    llm = ScriptedLLM(model="scripted").script(
        Judgement=[{"verdict": "sufficient", "reason": "ok"}], DraftAnswer=[slow_draft]
    )
    store = EdgeStore(tmp_path / "sse")
    runtime = scripted_runtime(settings, example_kb, llm, memory_store=store)
    pilot = PilotContext(settings=settings, runtime=runtime)
    slots = {"tier": "basic", "access_level": "public"}

    def request(message: str) -> TurnRequest:
        return TurnRequest(session_id="s1", customer_id="c-1", message=message, slots=slots)

    async def disconnect_then_send_again() -> tuple[bool, int]:
        events = turn_events(pilot, request("How long does a refund take?"), Caller("k", ""), "acme/s1")
        await events.__anext__()  # the first step event; then the customer's tab closes
        await events.aclose()
        held = pilot.locks["acme/s1"].locked()
        second = await start_turn(pilot, request("And for a gift card?"), Caller("k", ""), "acme/s1")
        return held, second.turn_index

    held, second_index = asyncio.run(disconnect_then_send_again())
    assert held
    assert second_index == 1
    turns = runtime.memory.session_turns(Scope("c-1"), "s1")
    assert [(t["turn_index"], t["status"]) for t in turns] == [(0, "done"), (1, "done")]
    assert turns[0]["user"] == "How long does a refund take?"
    store.close()


def test_two_workers_over_one_store_never_claim_the_same_turn(tmp_path, example_kb):
    """Two MemoryStores (two pilot workers: their in-process locks are separate) over one
    store: concurrent claims in one session still get distinct indices."""
    store = EdgeStore(tmp_path / "shared")
    workers = [MemoryStore(store, example_kb.encoders) for _ in range(2)]
    workers[0].ensure()
    scope, claimed = Scope("c-1"), []
    threads = [
        threading.Thread(
            target=lambda n=n: claimed.append(
                workers[n % 2].claim_turn(scope, "s1", {"user": f"message {n}"})
            )
        )
        for n in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(claimed) == list(range(8))
    assert sorted(t["user"] for t in workers[0].session_turns(scope, "s1")) == [
        f"message {n}" for n in range(8)
    ]
    store.close()


def test_two_pilot_apps_over_one_store_serve_one_session_without_losing_a_turn(
    settings, example_kb, tmp_path
):
    """Two pilot workers (two apps, each with its own runtime and locks) over one store, as
    with N workers over one Qdrant server: messages of one session sent to both at once all
    land, each in a slot of its own."""
    from fastapi.testclient import TestClient

    from config.settings import ApiKey
    from service.app import create_app
    from service.auth import hash_key
    from tests.helpers import answering_llm, with_api_keys

    key = ApiKey(
        name="backend",
        sha256=hash_key("backend-key"),
        tenant="acme",
        slots={"access_level": "public"},
        trust_customer_id=True,
    )
    from storage.kb.ingest import ingest_paths
    from storage.kb.knowledge_base import KnowledgeBase
    from tests.conftest import EXAMPLE_KB

    configured = with_api_keys(settings, key)
    store = EdgeStore(tmp_path / "shared")  # knowledge base, sessions and memory, shared
    kb = KnowledgeBase(configured, store, example_kb.encoders)
    ingest_paths(kb, [EXAMPLE_KB])
    runtimes = [scripted_runtime(configured, kb, answering_llm(), memory_store=store) for _ in range(2)]
    runtimes[0].memory.ensure()
    headers = {"Authorization": "Bearer backend-key"}
    with (
        TestClient(create_app(configured, tmp_path, runtimes[0])) as first,
        TestClient(create_app(configured, tmp_path, runtimes[1])) as second,
    ):
        session = first.post("/v1/sessions", json={"customer_id": "c-2"}, headers=headers).json()[
            "session_id"
        ]
        indices: list[int] = []

        def send(client, n: int) -> None:
            reply = client.post(
                f"/v1/sessions/{session}/messages",
                headers=headers,
                json={"message": f"How long does a refund take? ({n})"},
            )
            indices.append(reply.json()["turn_index"])

        threads = [threading.Thread(target=send, args=((first, second)[n % 2], n)) for n in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        stored = second.get(f"/v1/sessions/{session}", headers=headers).json()["turns"]
    assert sorted(indices) == list(range(6))
    assert sorted(t["user"] for t in stored) == [f"How long does a refund take? ({n})" for n in range(6)]
    assert {t["status"] for t in stored} == {"done"}
    store.close()
