"""A team's own plan names (issue 63): pages that say ``tiers: [business]`` are told about at
ingest and answer that plan's customers on the first run; a key naming a plan nobody knows
stops the start naming the key; a request naming a value the rules refuse is a 4xx naming it
and the values allowed (never "trouble reaching our knowledge base" or a failed turn); a
replay whose questions cannot run counts them lost."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from config.settings import ApiKey, ConfigError, SlotRule, load_settings
from main import app as cli
from tests.conftest import EXAMPLE_KB, REPO
from tests.helpers import api_key, bearer, examples_over_a_fixture, pilot_over_own_store, with_api_keys

pytestmark = pytest.mark.integration
PRIORITY = "How do I reach the priority support line?"
BUSINESS_PAGE = (
    "---\ntitle: Priority support line\ntiers: [business]\n---\n\n"
    "Customers on the Business plan reach the priority support line at +1 555 0100, "
    "every day from 7 am to 11 pm.\n"
)


def customer_key(name: str, **slots: str) -> ApiKey:
    return api_key(name, tenant="", **slots)


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    """A new team's data dir: the example pages and one page of its own plan, ingested."""
    root = tmp_path_factory.mktemp("plans")
    pages = root / "pages"
    pages.mkdir()
    (pages / "priority-support.md").write_text(BUSINESS_PAGE, encoding="utf-8")
    data = root / "data"
    runner = CliRunner()
    done = runner.invoke(cli, ["--data-dir", str(data), "ingest", str(EXAMPLE_KB), str(pages)])
    return data, pages, done


def test_ingest_names_the_plans_the_config_does_not_list_and_how_to_list_them(team):
    data, pages, done = team
    assert done.exit_code == 0, done.output
    assert "the pages name tier values the configuration does not list: business" in done.output
    assert "slots.tier.values: [basic, pro, enterprise, business]" in done.output
    again = CliRunner().invoke(cli, ["--data-dir", str(data), "ingest", str(pages), "--json"])
    assert again.exit_code == 0, again.output
    report = json.loads(again.stdout[again.stdout.index("{") :])
    assert report["unlisted_values"] == {"tier": ["business"]}


def test_the_teams_own_plan_answers_its_customers_on_the_first_run(team):
    data, _, _ = team
    keys = [customer_key("business-site", tier="business"), customer_key("basic-site", tier="basic")]
    app_settings = with_api_keys(load_settings(), *keys)
    from service.app import create_app

    with TestClient(create_app(app_settings, data)) as client:
        for key, cites_it in (("business-site", True), ("basic-site", False)):
            session = client.post(
                "/v1/sessions", json={"customer_id": f"c-{key}"}, headers=bearer(key)
            ).json()["session_id"]
            said = client.post(
                f"/v1/sessions/{session}/messages", json={"message": PRIORITY}, headers=bearer(key)
            )
            assert said.status_code == 200, said.text  # never 503 "trouble reaching"
            reply = said.json()
            assert reply["verdict"] != "error"
            cited = [c["source_id"] for c in reply["citations"]]
            assert any("priority-support" in c for c in cited) == cites_it, reply


def test_a_key_naming_a_plan_nobody_knows_stops_the_start_naming_the_key(
    team, settings, example_kb, tmp_path
):
    data, _, _ = team
    wrong = customer_key("web", tier="platinum")
    keys = json.dumps([wrong.model_dump()])
    refused = CliRunner().invoke(
        cli, ["--data-dir", str(data), "serve"], env={"SUPPORTCREW_PILOT__API_KEYS": keys}
    )
    assert refused.exit_code == 2, refused.output
    assert "key 'web'" in refused.output and "'platinum' is not one of" in refused.output
    assert "business" in refused.output  # the team's own plan is among those allowed
    with (
        pilot_over_own_store(settings, example_kb, tmp_path / "data", wrong) as (app, _),
        pytest.raises(ConfigError, match="key 'web' of tenant '': slot tier: 'platinum'"),
        TestClient(app),
    ):
        pass


PRODUCTS = ["cloud", "onprem"]


@pytest.fixture
def client_with_products(settings, example_kb, tmp_path):
    """A pilot whose advisory ``product`` slot lists its values."""
    slots = {
        **settings.slots,
        "product": SlotRule(field="product", mode="advisory", match="equals_or_absent", values=PRODUCTS),
    }
    configured = settings.model_copy(update={"slots": slots})
    key = customer_key("backend", access_level="public")
    with (
        pilot_over_own_store(configured, example_kb, tmp_path / "data", key, roles="evidence") as (
            app,
            _,
        ),
        TestClient(app) as client,
    ):
        yield client


@examples_over_a_fixture(30)
@given(value=st.one_of(st.sampled_from(PRODUCTS), st.text(min_size=1, max_size=30)))
def test_a_request_naming_a_value_the_rules_refuse_is_a_4xx_naming_it(client_with_products, value):
    client = client_with_products
    made = client.post(
        "/v1/sessions",
        json={"customer_id": "c-1", "slots": {"product": value}},
        headers=bearer("backend"),
    )
    if value.strip() in PRODUCTS or not value.strip():
        assert made.status_code == 201, made.text
        return
    assert made.status_code == 422, made.text
    error = made.json()["error"]
    assert error["code"] in ("invalid_slot", "invalid_request"), error
    if error["code"] == "invalid_slot":
        assert repr(value.strip()) in error["message"] and "cloud, onprem" in error["message"]


def test_a_session_whose_slots_the_rules_now_refuse_gets_a_4xx_not_a_failed_turn(client_with_products):
    from service.stores.pilot_store import SESSIONS

    client = client_with_products
    session = client.post(
        "/v1/sessions",
        json={"customer_id": "c-1", "slots": {"product": "cloud"}},
        headers=bearer("backend"),
    ).json()["session_id"]
    pilot = client.app.state.pilot
    header = pilot.store.session("", session)
    header["slots"] = {"product": "mainframe"}  # stored when the config still listed it
    pilot.store.store.upsert(SESSIONS, [pilot.store._point(f"/{session}", "session", header)])
    said = client.post(
        f"/v1/sessions/{session}/messages",
        json={"message": "How long does a refund take?"},
        headers=bearer("backend"),
    )
    assert said.status_code == 422, said.text
    assert said.json()["error"]["code"] == "invalid_slot"
    assert "'mainframe' is not one of cloud, onprem" in said.json()["error"]["message"]


def test_a_replayed_question_that_cannot_run_is_counted_lost(team):
    from storage.kb.knowledge_base import KnowledgeBase
    from storage.memory import MemoryStore, Scope

    data, _, _ = team
    kb = KnowledgeBase.open(load_settings(), data)
    try:
        memory = MemoryStore(kb.store, kb.encoders, load_settings().slots)
        asked = {"user": PRIORITY, "kind": "question", "status": "done", "verdict": "answered"}
        platinum = {**asked, "user": "Is there a platinum support line?", "slots": {"tier": "platinum"}}
        memory.add_turn(Scope("c-9", ""), "s-platinum", 0, platinum)
        memory.add_turn(Scope("c-8", ""), "s-business", 0, {**asked, "slots": {"tier": "business"}})
    finally:
        kb.close()
    same = data.parent / "same.yaml"  # the shipped configuration, its plans listed, unchanged
    same.write_text((REPO / "config" / "assistant.yaml").read_text(encoding="utf-8"))
    done = CliRunner().invoke(
        cli, ["--data-dir", str(data), "replay", "--against", str(same), "--json", "--days", "1"]
    )
    assert done.exit_code == 1, done.output
    report = json.loads(done.stdout[done.stdout.index("{") :])
    by_slots = {c["slots"].get("tier"): c for c in report["changes"]}
    assert by_slots["platinum"]["change"] == "lost"
    assert by_slots["business"]["change"] == "same"  # the team's plan runs, before and after
    assert by_slots["business"]["after"]["verdict"] == "answered"
