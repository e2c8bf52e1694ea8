"""A publishable widget key serves every visitor of a site: one visitor (a session token, a
client address) has a budget of its own and cannot spend the site's. Every route a session
token can call is counted, search and feedback included. The client address behind the
proxy is the one it forwards, and only from a proxy the configuration trusts."""

from __future__ import annotations

from contextlib import contextmanager

import httpx
import pytest
from fastapi.testclient import TestClient

from service.widget_tokens import SESSION_SECRET_ENV
from tests.helpers import acme_team, pilot_over_own_store, running_server, widget_key

pytestmark = pytest.mark.integration
SITE = "https://help.acme.example"
WIDGET = widget_key("site", "pk_live_acme", [SITE])
FLOODER, NEIGHBOUR = ("203.0.113.7", 40_000), ("198.51.100.4", 40_001)
EMOJI = "\U0001f600" * 8000  # 32,000 bytes of UTF-8: the probe's waiting message


def configured(settings, **pilot):
    return settings.model_copy(update={"pilot": settings.pilot.model_copy(update=pilot)})


@contextmanager
def site(settings, example_kb, tmp_path, monkeypatch, key=WIDGET, **pilot):
    """The app of a pilot with the acme team's keys and the widget ``key``, ``pilot``'s
    settings changed."""
    monkeypatch.setenv(SESSION_SECRET_ENV, "service-secret-" + "x" * 40)
    with pilot_over_own_store(
        configured(settings, **pilot), example_kb, tmp_path / "data", *acme_team(), key, roles="evidence"
    ) as (app, _):
        yield app


@pytest.fixture
def widget_app(settings, example_kb, tmp_path, monkeypatch):
    # the key's day of message bytes: what one visitor drained before (the probe)
    limits = settings.pilot.limits.model_copy(update={"message_bytes": "150000/day"})
    with site(settings, example_kb, tmp_path, monkeypatch, limits=limits) as app:
        yield app


def visitor(app, address: tuple[str, int]) -> TestClient:
    return TestClient(app, client=address)


def open_session(client: TestClient) -> tuple[str, dict[str, str]]:
    opened = client.post(
        "/v1/widget/sessions", json={}, headers={"Authorization": "Bearer pk_live_acme", "Origin": SITE}
    )
    assert opened.status_code == 201, opened.text
    body = opened.json()
    return body["session_id"], {"Authorization": f"Bearer {body['token']}", "Origin": SITE}


def test_one_visitor_cannot_spend_the_widgets_day(widget_app):
    with TestClient(widget_app):  # the service starts
        flood = visitor(widget_app, FLOODER)
        refused = None
        for _ in range(4):  # sessions handed off, then waiting messages of 32 kB each
            session, token = open_session(flood)
            flood.post(f"/v1/sessions/{session}/handoff", json={}, headers=token)
            for _ in range(8):
                sent = flood.post(
                    f"/v1/sessions/{session}/messages", json={"message": EMOJI}, headers=token
                )
                if sent.status_code == 429:
                    refused = sent.json()["error"]
                    break
            if refused:
                break
        assert refused is not None and refused["limit"] == "message_bytes"
        assert refused.get("per") in ("address", "session"), refused  # the visitor's, not the key's
        # another visitor of the site is answered as before
        session, token = open_session(visitor(widget_app, NEIGHBOUR))
        said = visitor(widget_app, NEIGHBOUR).post(
            f"/v1/sessions/{session}/messages",
            json={"message": "How long does a refund take?"},
            headers=token,
        )
        assert said.status_code == 200, said.text
        assert said.json()["verdict"] == "answered"


def test_search_and_feedback_of_a_session_token_are_counted(widget_app):
    with TestClient(widget_app):
        client = visitor(widget_app, FLOODER)
        session, token = open_session(client)
        searched = [
            client.post("/v1/search", json={"query": "refund"}, headers=token).status_code
            for _ in range(31)
        ]
        assert searched[:30] == [200] * 30 and searched[30] == 429, searched
        said = client.post(
            f"/v1/sessions/{session}/messages",
            json={"message": "How long does a refund take?"},
            headers=token,
        )
        assert said.status_code == 200, said.text
        rated = [
            client.post(
                f"/v1/sessions/{session}/feedback",
                json={"turn_index": 0, "rating": "up", "comment": "x" * 2000},
                headers=token,
            ).status_code
            for _ in range(21)
        ]
        assert rated[:20] == [201] * 20 and rated[20] == 429, rated
        # the other visitor still searches and rates
        _, other = open_session(visitor(widget_app, NEIGHBOUR))
        found = visitor(widget_app, NEIGHBOUR).post(
            "/v1/search", json={"query": "refund"}, headers=other
        )
        assert found.status_code == 200


def test_a_widget_keys_own_limits_replace_the_defaults(settings, example_kb, tmp_path, monkeypatch):
    monkeypatch.setenv(SESSION_SECRET_ENV, "service-secret-" + "x" * 40)
    small = WIDGET.model_copy(update={"limits": {"sessions": "2/minute"}})
    with (
        pilot_over_own_store(settings, example_kb, tmp_path / "data", small, roles="evidence") as (
            app,
            _,
        ),
        TestClient(app),
    ):
        for n in range(2):
            open_session(visitor(app, (f"192.0.2.{n}", 1)))
        third = visitor(app, ("192.0.2.9", 1)).post(
            "/v1/widget/sessions",
            json={},
            headers={"Authorization": "Bearer pk_live_acme", "Origin": SITE},
        )
        assert third.status_code == 429 and third.json()["error"]["per"] == "key"


@pytest.mark.parametrize(("trusted", "apart"), [(["127.0.0.1"], True), ([], False)])
def test_the_forwarded_address_counts_only_from_a_trusted_proxy(
    settings, example_kb, tmp_path, monkeypatch, trusted, apart
):
    """Behind nginx (a trusted proxy on loopback) each forwarded address is its own visitor;
    from an untrusted peer the header is ignored and the peer is the visitor."""
    monkeypatch.setenv(SESSION_SECRET_ENV, "service-secret-" + "x" * 40)
    visitors = settings.pilot.visitor_limits.model_copy(update={"sessions": "2/hour"})
    with (
        pilot_over_own_store(
            configured(settings, visitor_limits=visitors, trusted_proxies=trusted),
            example_kb,
            tmp_path / "data",
            WIDGET,
            roles="evidence",
        ) as (app, _),
        running_server(app) as (base, _server),
    ):
        statuses = [
            httpx.post(
                f"{base}/v1/widget/sessions",
                json={},
                headers={
                    "Authorization": "Bearer pk_live_acme",
                    "Origin": SITE,
                    "X-Forwarded-For": f"203.0.113.{n}",
                },
            ).status_code
            for n in range(4)
        ]
    assert statuses == ([201] * 4 if apart else [201, 201, 429, 429]), statuses


def test_a_visitor_renews_its_token_within_its_read_budget(settings, example_kb, tmp_path, monkeypatch):
    """Renewal mints a token: counted as a read of the visitor's session, so a visitor cannot
    renew without end, and a renewed token keeps the session's budget (it does not reset it)."""
    monkeypatch.setenv(SESSION_SECRET_ENV, "service-secret-" + "x" * 40)
    few = settings.pilot.visitor_limits.model_copy(update={"reads": "3/minute"})
    with (
        pilot_over_own_store(
            configured(settings, visitor_limits=few),
            example_kb,
            tmp_path / "data",
            WIDGET,
            roles="evidence",
        ) as (app, _),
        TestClient(app),
    ):
        client = visitor(app, FLOODER)
        session, token = open_session(client)
        codes = []
        for _ in range(4):
            renewed = client.post(f"/v1/widget/sessions/{session}/token", headers=token)
            codes.append(renewed.status_code)
            if renewed.status_code == 200:
                token = {"Authorization": f"Bearer {renewed.json()['token']}", "Origin": SITE}
        assert codes == [200, 200, 200, 429], codes
        assert renewed.json()["error"]["limit"] == "reads"
        # the renewed token reads on the same spent budget
        assert client.get(f"/v1/sessions/{session}", headers=token).status_code == 429
        # another visitor renews its own
        other = visitor(app, NEIGHBOUR)
        theirs, their_token = open_session(other)
        assert other.post(f"/v1/widget/sessions/{theirs}/token", headers=their_token).status_code == 200


WORDS = "a" * 800  # 800 bytes: a long customer message


@pytest.fixture
def small_site(settings, example_kb, tmp_path, monkeypatch):
    """A widget key whose day of message bytes is 10,000 (8,000 shared, 2,000 kept for new
    visitors), each address 2,000 a day: five addresses drain what they share."""
    key = WIDGET.model_copy(update={"limits": {"message_bytes": "10000/day"}})
    visitors = settings.pilot.visitor_limits.model_copy(update={"message_bytes": "2000/day"})
    with site(settings, example_kb, tmp_path, monkeypatch, key, visitor_limits=visitors) as app:
        yield app


def waiting_session(client: TestClient) -> tuple[str, dict[str, str]]:
    """A visitor's session handed to people: its messages wait, no turn runs."""
    session, token = open_session(client)
    assert client.post(f"/v1/sessions/{session}/handoff", json={}, headers=token).status_code == 200
    return session, token


def test_a_crowd_of_addresses_cannot_spend_what_is_kept_for_new_visitors(small_site):
    """The probe: 52 addresses spent a key's day of bytes in 26.5 s and every new visitor got
    429 until midnight. A crowd still spends what visitors share, but not the share kept for
    newcomers: the next new visitor is served, and the lead and /metrics see the key low."""
    from prometheus_client.parser import text_string_to_metric_families

    from tests.helpers import bearer

    with TestClient(small_site):
        for n in range(5):  # 5 addresses x 1,600 bytes: the shared 8,000
            crowd = visitor(small_site, (f"203.0.113.{n}", 40_000))
            session, token = waiting_session(crowd)
            for _ in range(2):
                sent = crowd.post(
                    f"/v1/sessions/{session}/messages", json={"message": WORDS}, headers=token
                )
                assert sent.status_code == 200, sent.text
        # one of the crowd, 400 bytes left of its own day: the site's share is spent for it
        again = crowd.post(
            f"/v1/sessions/{session}/messages", json={"message": "b" * 300}, headers=token
        )
        assert again.status_code == 429 and again.json()["error"]["per"] == "key", again.text
        assert "this site's visitors have" in again.json()["error"]["message"]
        # a new visitor is served from the share kept for newcomers, up to its allowance
        newcomer = visitor(small_site, NEIGHBOUR)
        session, token = waiting_session(newcomer)
        first = newcomer.post(
            f"/v1/sessions/{session}/messages", json={"message": "c" * 300}, headers=token
        )
        assert first.status_code == 200, first.text
        more = newcomer.post(
            f"/v1/sessions/{session}/messages", json={"message": "d" * 300}, headers=token
        )
        assert more.status_code == 429 and more.json()["error"]["per"] == "key"
        # the lead reads the key running low, and so does its tenant's /metrics
        budgets = TestClient(small_site).get("/v1/reports/budgets", headers=bearer("lead")).json()
        [shared] = [
            b for b in budgets["budgets"] if b["limit"] == "message_bytes" and b["share"] == "shared"
        ]
        assert shared["low"] and shared["left"] < 0.01 and shared["capacity"] == 8000, shared
        assert round(shared["per_hour"]) == round(8000 / 24)
        scraped = TestClient(small_site).get("/metrics", headers=bearer("lead")).text
        levels = {
            (s.labels["limit"], s.labels["share"]): s.value
            for family in text_string_to_metric_families(scraped)
            for s in family.samples
            if s.name == "supportcrew_widget_budget_left_ratio"
        }
        assert levels[("message_bytes", "shared")] < 0.01
        assert 0.8 < levels[("message_bytes", "newcomers")] < 0.9  # 300 of 2,000 taken


def test_a_widget_keys_budget_refills_as_it_goes(small_site):
    """A rolling budget: spent, it comes back at its rate (here 4 a second), not at midnight."""
    import time

    from limits import parse

    from service.auth import Caller
    from service.stores.rate_limits import counter_key

    with TestClient(small_site):
        budget = small_site.state.pilot.limits.budget
        who = Caller("site", "acme", publishable=True, address="192.0.2.50")
        key, item = counter_key(who), parse("4/second")
        assert [budget.spend("turns", who, key, item, 1) for _ in range(4)] == [None] * 4
        wait = budget.spend("turns", who, key, item, 1)
        assert wait is not None and 0 < wait <= 0.26, wait
        time.sleep(0.3)
        assert budget.spend("turns", who, key, item, 1) is None
