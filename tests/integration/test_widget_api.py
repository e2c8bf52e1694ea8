"""The embeddable widget's credentials over HTTP: a publishable key that only opens sessions
from its origins, a session token good for one session, customer tokens signed by the team's
site (forged, expired, replayed, too long-lived: refused), and secret keys refused from any
page but the service's own."""

from __future__ import annotations

import time
import uuid

import jwt
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from config.settings import ApiKey, ConfigError
from service.widget_tokens import SESSION_SECRET_ENV, SessionTokens, TokenError
from tests.helpers import acme_team, bearer, pilot_over_own_store, widget_key

pytestmark = pytest.mark.integration
SITE = "https://help.acme.example"
IDENTITY_ENV = "ACME_WIDGET_IDENTITY_SECRET"
IDENTITY_SECRET = "site-secret-" + "s" * 40
WIDGET = widget_key("site", "pk_live_acme", [SITE], IDENTITY_ENV)
ANONYMOUS_WIDGET = widget_key("docs-site", "pk_live_docs", ["https://docs.acme.example"])
# a second site of the tenant, its tokens signed with the same secret
SHOP = "https://shop.acme.example"
SHOP_WIDGET = widget_key("shop", "pk_live_shop", [SHOP], IDENTITY_ENV)


@pytest.fixture
def client(settings, example_kb, tmp_path, monkeypatch):
    monkeypatch.setenv(SESSION_SECRET_ENV, "service-secret-" + "x" * 40)
    monkeypatch.setenv(IDENTITY_ENV, IDENTITY_SECRET)
    keys = (*acme_team(), WIDGET, ANONYMOUS_WIDGET, SHOP_WIDGET)
    with (
        pilot_over_own_store(settings, example_kb, tmp_path / "data", *keys, roles="evidence") as (
            app,
            _,
        ),
        TestClient(app) as test_client,
    ):
        yield test_client


def from_site(key: str = "pk_live_acme", origin: str = SITE) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "Origin": origin}


def customer_token(customer: str = "cust-42", lifetime_s: float = 300, **claims) -> str:
    now = int(time.time())
    payload = {"sub": customer, "iat": now, "exp": now + int(lifetime_s), "jti": uuid.uuid4().hex}
    return jwt.encode({**payload, **claims}, IDENTITY_SECRET, algorithm="HS256")


def open_widget_session(client, **body) -> dict:
    made = client.post("/v1/widget/sessions", json=body, headers=from_site())
    assert made.status_code == 201, made.text
    return made.json()


def test_a_widget_key_opens_a_session_whose_token_answers_only_that_session(client):
    opened = open_widget_session(client)
    assert opened["customer_id"].startswith("anon-")
    assert opened["expires_at"] > time.time() + 50 * 60
    token = {"Authorization": f"Bearer {opened['token']}", "Origin": SITE}
    said = client.post(
        f"/v1/sessions/{opened['session_id']}/messages",
        json={"message": "How long does a refund take?"},
        headers=token,
    )
    assert said.status_code == 200, said.text
    assert said.json()["verdict"] == "answered"
    assert said.headers["access-control-allow-origin"] == SITE
    assert client.get(f"/v1/sessions/{opened['session_id']}", headers=token).status_code == 200
    other = open_widget_session(client)
    # the token holds its own session: another one is unknown to it, and it opens none
    assert client.get(f"/v1/sessions/{other['session_id']}", headers=token).status_code == 404
    assert client.post("/v1/sessions", json={}, headers=token).status_code == 403
    # the publishable key itself holds no conversation and reads nothing
    key = from_site()
    assert client.get(f"/v1/sessions/{opened['session_id']}", headers=key).status_code == 403
    assert client.post("/v1/sessions", json={}, headers=key).status_code == 403
    assert client.get("/v1/handoffs", headers=key).status_code == 403


def test_a_widget_key_from_another_origin_is_refused_and_gets_no_cors_grant(client):
    refused = client.post(
        "/v1/widget/sessions", json={}, headers=from_site(origin="https://evil.example")
    )
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "origin_not_allowed"
    assert "access-control-allow-origin" not in refused.headers
    preflight = client.options(
        "/v1/widget/sessions",
        headers={
            "Origin": "https://evil.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type",
        },
    )
    assert "access-control-allow-origin" not in preflight.headers
    allowed = client.options(
        "/v1/widget/sessions",
        headers={
            "Origin": SITE,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type",
        },
    )
    assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == SITE
    # one widget's site is not another's
    other = client.post("/v1/widget/sessions", json={}, headers=from_site("pk_live_docs"))
    assert other.status_code == 403


def test_a_secret_key_is_refused_from_any_page_but_the_services_own(client):
    pasted = client.post(
        "/v1/sessions", json={}, headers={**bearer("backend"), "Origin": "https://help.acme.example"}
    )
    assert pasted.status_code == 403
    assert "never belongs in a web page" in pasted.json()["error"]["message"]
    own = client.post(
        "/v1/sessions", json={}, headers={**bearer("backend"), "Origin": "http://testserver"}
    )
    assert own.status_code == 201
    assert (
        client.post("/v1/sessions", json={}, headers=bearer("backend")).status_code == 201
    )  # no browser


def test_a_signed_customer_token_names_the_visitor_once(client):
    token = customer_token("cust-42")
    opened = open_widget_session(client, customer_token=token)
    assert opened["customer_id"] == "cust-42"
    replayed = client.post("/v1/widget/sessions", json={"customer_token": token}, headers=from_site())
    assert replayed.status_code == 403
    assert "already opened a session" in replayed.json()["error"]["message"]


def test_a_customer_token_opens_one_session_in_its_tenant_whichever_widget(client):
    token = customer_token("cust-43")
    assert open_widget_session(client, customer_token=token)["customer_id"] == "cust-43"
    replayed = client.post(
        "/v1/widget/sessions", json={"customer_token": token}, headers=from_site("pk_live_shop", SHOP)
    )
    assert replayed.status_code == 403, replayed.text
    assert "already opened a session" in replayed.json()["error"]["message"]


def test_a_token_spent_before_tokens_were_spent_per_tenant_stays_spent(client):
    from service.widget_tokens import SPENT
    from storage.qdrant.store import PointData

    spent = client.app.state.pilot.spent_tokens
    token = customer_token("cust-44")
    jti = jwt.decode(token, options={"verify_signature": False})["jti"]
    legacy = {"key": f"acme/site/{jti}", "claim": "x", "hour": str(int(time.time() // 3600))}
    spent.store.upsert(SPENT, [PointData(id=str(uuid.uuid4()), dense=spent.vector, payload=legacy)])
    replayed = client.post(
        "/v1/widget/sessions", json={"customer_token": token}, headers=from_site("pk_live_shop", SHOP)
    )
    assert replayed.status_code == 403 and "already opened" in replayed.json()["error"]["message"]


@pytest.mark.parametrize(
    ("token", "why"),
    [
        (jwt.encode({"sub": "cust-42", "iat": 1, "exp": 2, "jti": "a"}, IDENTITY_SECRET), "expired"),
        ("not-a-token", "not valid"),
        ("a.b.c", "not valid"),
    ],
)
def test_a_bad_customer_token_is_refused_naming_why(client, token, why):
    refused = client.post("/v1/widget/sessions", json={"customer_token": token}, headers=from_site())
    assert refused.status_code == 403
    assert why in refused.json()["error"]["message"]


def test_forged_long_lived_or_anonymous_customer_tokens_are_refused(client):
    now = int(time.time())
    forged = jwt.encode(
        {"sub": "cust-1", "iat": now, "exp": now + 60, "jti": "x"}, "another-secret-" + "y" * 30
    )
    long_lived = customer_token(lifetime_s=7 * 86_400)
    unsigned = jwt.encode(
        {"sub": "cust-1", "iat": now, "exp": now + 60, "jti": "y"}, None, algorithm="none"
    )
    anonymous = customer_token("anon-123")
    no_jti = jwt.encode({"sub": "cust-1", "iat": now, "exp": now + 60}, IDENTITY_SECRET)
    for token, why in (
        (forged, "signature does not match"),
        (long_lived, "expires more than 600 s"),
        (unsigned, "not valid"),
        (anonymous, "anonymous ids"),
        (no_jti, "jti"),
    ):
        refused = client.post("/v1/widget/sessions", json={"customer_token": token}, headers=from_site())
        assert refused.status_code == 403, (why, refused.text)
        assert why in refused.json()["error"]["message"], refused.text
    # a widget without an identity secret takes no customer tokens at all
    docs = client.post(
        "/v1/widget/sessions",
        json={"customer_token": customer_token()},
        headers=from_site("pk_live_docs", "https://docs.acme.example"),
    )
    assert docs.status_code == 403 and "identity_secret_env" in docs.json()["error"]["message"]


def test_a_forged_or_expired_session_token_is_refused(client):
    opened = open_widget_session(client)
    header, payload, signature = opened["token"].split(".")
    tampered = f"{header}.{payload}.{signature[::-1]}"
    for token in (tampered, jwt.encode({"sid": opened["session_id"], "exp": 1}, "x" * 40)):
        refused = client.get(
            f"/v1/sessions/{opened['session_id']}",
            headers={"Authorization": f"Bearer {token}", "Origin": SITE},
        )
        assert refused.status_code == 401, refused.text
        assert "session token refused" in refused.json()["error"]["message"]


@hypothesis_settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(flip=st.integers(min_value=0, max_value=10_000), replacement=st.characters(codec="ascii"))
def test_any_change_to_a_session_token_is_refused(flip, replacement):
    tokens = SessionTokens("k" * 40, minutes=60)
    token, _ = tokens.issue("acme", "site", "s1", time.time())
    position = flip % len(token)
    changed = token[:position] + replacement + token[position + 1 :]
    if changed == token:
        return
    try:
        claims = tokens.read(changed)
    except TokenError:  # the only way a changed token may end: anything else fails the test
        return
    else:  # base64 padding bits: a change that decodes to the same bytes is the same token
        assert (claims.session_id, claims.tenant, claims.key_name) == ("s1", "acme", "site")


def test_widget_keys_need_their_secrets_and_origins_before_the_service_starts(monkeypatch):
    from config.settings import PilotSettings

    monkeypatch.delenv(SESSION_SECRET_ENV, raising=False)
    with pytest.raises(ConfigError, match=SESSION_SECRET_ENV):
        SessionTokens.from_environment(PilotSettings(api_keys=[ANONYMOUS_WIDGET]))
    monkeypatch.setenv(SESSION_SECRET_ENV, "short")
    with pytest.raises(ConfigError, match="at least 32"):
        SessionTokens.from_environment(PilotSettings(api_keys=[ANONYMOUS_WIDGET]))
    monkeypatch.setenv(SESSION_SECRET_ENV, "z" * 40)
    monkeypatch.delenv(IDENTITY_ENV, raising=False)
    with pytest.raises(ConfigError, match=IDENTITY_ENV):
        SessionTokens.from_environment(PilotSettings(api_keys=[WIDGET]))
    assert SessionTokens.from_environment(PilotSettings(api_keys=acme_team())) is None
    for bad, message in (
        ({"origins": []}, "lists no origins"),
        ({"origins": ["https://help.acme.example/"]}, "scheme://host"),
        ({"origins": ["https://*.acme.example"]}, "scheme://host"),
        ({"trust_customer_id": True}, "cannot be trusted"),
    ):
        with pytest.raises(ValueError, match=message):
            ApiKey(**{**WIDGET.model_dump(), **bad})
    with pytest.raises(ValueError, match="widget keys only"):
        ApiKey(name="b", sha256=WIDGET.sha256, identity_secret_env=IDENTITY_ENV)


def test_spent_token_records_go_once_their_tokens_have_expired(client):
    from service.idle_sessions import forget_spent_tokens
    from service.widget_tokens import SPENT

    pilot = client.app.state.pilot
    spent = pilot.spent_tokens
    an_hour_ago = time.time() - 3600
    assert spent.spend("acme", "old-token", expires_at=an_hour_ago - 60)
    assert spent.spend("acme", "live-token", expires_at=time.time() + 300)
    forget_spent_tokens(pilot)
    kept = {r.payload["key"] for r in spent.store.scroll(SPENT)}
    assert '["acme", "live-token"]' in kept and '["acme", "old-token"]' not in kept
    # a live token stays spent: its replay is still refused
    assert not spent.spend("acme", "live-token", expires_at=time.time() + 300)


def test_a_session_token_renews_itself_for_its_own_session_only(client):
    opened = open_widget_session(client)
    session = opened["session_id"]
    token = {"Authorization": f"Bearer {opened['token']}", "Origin": SITE}
    time.sleep(1.1)  # a later expiry than the first token's
    renewed = client.post(f"/v1/widget/sessions/{session}/token", headers=token)
    assert renewed.status_code == 200, renewed.text
    body = renewed.json()
    assert body["session_id"] == session and body["expires_at"] > opened["expires_at"]
    fresh = {"Authorization": f"Bearer {body['token']}", "Origin": SITE}
    assert client.get(f"/v1/sessions/{session}", headers=fresh).status_code == 200
    other = open_widget_session(client)["session_id"]
    assert client.post(f"/v1/widget/sessions/{other}/token", headers=fresh).status_code == 404
    # a key is no session token: it renews nothing
    backend = client.post(f"/v1/widget/sessions/{session}/token", headers=bearer("backend"))
    assert backend.status_code in (403, 404)


def test_a_session_token_rates_and_answers_only_its_own_conversation(client):
    mine, theirs = open_widget_session(client), open_widget_session(client)
    for opened in (mine, theirs):
        said = client.post(
            f"/v1/sessions/{opened['session_id']}/messages",
            json={"message": "Do you ship printed manuals to Mars?"},
            headers={"Authorization": f"Bearer {opened['token']}", "Origin": SITE},
        )
        assert said.status_code == 200, said.text
    token = {"Authorization": f"Bearer {mine['token']}", "Origin": SITE}
    for session, code in ((theirs["session_id"], 404), (mine["session_id"], None)):
        mark = client.post(
            f"/v1/sessions/{session}/feedback", json={"turn_index": 0, "rating": "down"}, headers=token
        )
        closing = client.post(
            f"/v1/sessions/{session}/satisfaction", json={"solved": False}, headers=token
        )
        assert (mark.status_code, closing.status_code) == ((code, code) if code else (201, 200))
    other = {"Authorization": f"Bearer {theirs['token']}", "Origin": SITE}
    stored = client.get(f"/v1/sessions/{theirs['session_id']}", headers=other).json()
    assert stored["feedback"] == [] and "csat_solved" not in stored["session"]
