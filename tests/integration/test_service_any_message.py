"""The pilot's message route takes any message within the cap, as JSON or server-sent events,
and every turn ends in an outcome the customer can read, its session turn ``done``."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from hypothesis import given

from config.settings import ApiKey
from service.app import create_app
from service.auth import hash_key
from storage.kb.knowledge_base import KnowledgeBase
from storage.qdrant.edge_store import EdgeStore
from tests.helpers import scripted_runtime, with_api_keys
from tests.messages import CHARGED_TWICE, REAL_TURNS, customer_messages
from tests.scripted_llm import ScriptedLLM

pytestmark = [pytest.mark.integration, pytest.mark.serial]  # bounds each turn by its deadline
HEADERS = {"Authorization": "Bearer widget-key"}
ENDED = {"answered", "suggest", "idk", "handoff"}


@pytest.fixture(scope="module")
def client(settings, example_kb, tmp_path_factory):
    key = ApiKey(
        name="widget",
        sha256=hash_key("widget-key"),
        tenant="acme",
        slots={"access_level": "customer", "tier": "basic"},
    )
    configured = with_api_keys(settings, key)
    limits = configured.pilot.limits.model_copy(update={"turns": "100000/minute"})
    configured = configured.model_copy(
        update={"pilot": configured.pilot.model_copy(update={"limits": limits})}
    )
    data = tmp_path_factory.mktemp("pilot")
    store = EdgeStore(data / "store")
    kb = KnowledgeBase(configured, store, example_kb.encoders)
    from storage.kb.ingest import ingest_paths
    from tests.conftest import EXAMPLE_KB

    ingest_paths(kb, [EXAMPLE_KB])
    runtime = scripted_runtime(
        configured, kb, ScriptedLLM(model="scripted"), memory_store=store, roles="evidence"
    )
    with TestClient(create_app(configured, data, runtime)) as test_client:
        yield test_client
    store.close()


def sent(client, message: str, streaming: bool) -> dict:
    session = client.post("/v1/sessions", json={}, headers=HEADERS).json()["session_id"]
    accept = "text/event-stream" if streaming else "application/json"
    response = client.post(
        f"/v1/sessions/{session}/messages",
        json={"message": message},
        headers={**HEADERS, "Accept": accept},
    )
    assert response.status_code == 200, response.text[:500]
    if streaming:
        events = response.text.strip().split("\n\n")
        assert events[-1].startswith("event: result\n"), events[-1][:300]
        result = json.loads(events[-1].split("data: ", 1)[1])
    else:
        result = response.json()
    assert result["verdict"] in ENDED
    stored = client.get(f"/v1/sessions/{session}", headers=HEADERS).json()["turns"]
    assert [(t["user"], t["status"]) for t in stored] == [(message, "done")]
    return result


@pytest.mark.parametrize("streaming", [False, True], ids=["json", "sse"])
def test_the_charged_twice_paragraph_is_answered(client, streaming):
    result = sent(client, CHARGED_TWICE, streaming)
    assert result["verdict"] == "answered"
    assert result["citations"][0]["source_id"] == "billing/refunds.md"


@REAL_TURNS
@given(message=customer_messages())
def test_any_message_within_the_cap_gets_a_stored_outcome_as_json(client, message):
    sent(client, message, streaming=False)


@REAL_TURNS
@given(message=customer_messages())
def test_any_message_within_the_cap_gets_a_stored_outcome_as_events(client, message):
    sent(client, message, streaming=True)
