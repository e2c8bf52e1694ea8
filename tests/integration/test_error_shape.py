"""One error shape: every route of docs/openapi.json, sent a request without a key, with a
key of another role, and with a body that is not JSON, answers a 4xx whose body is
``service.errors.ErrorBody`` (``{"error": {"code", "message", "details"?}}``), as the schema
declares for every route; a body that is not valid names the field at fault.

The field at fault has one spelling, ``error.details[].field``: a route's own refusal (an
unknown agent, a bad ``since``, a slot, a turn) and FastAPI's validation write it the same
way, so a client reads one place whichever refused. ``/readyz`` is the one exception to the
envelope: its 503 is the probe's ``{"ready", "checks"}`` (docs/pilot.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from service.errors import ApiError, ErrorBody, error_body
from tests.helpers import (
    acme_team,
    bearer,
    examples_over_a_fixture,
    fields_at_fault,
    pilot_over_own_store,
)

pytestmark = pytest.mark.integration
SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"
OPERATIONS = [
    (method.upper(), path, operation)
    for path, methods in json.loads(SCHEMA.read_text(encoding="utf-8"))["paths"].items()
    for method, operation in methods.items()
]
OPEN = {"/healthz", "/readyz", "/metrics"}  # no key needed: their answers are not errors


def concrete(path: str) -> str:
    """The path with every parameter filled with a name nothing has."""
    return path.replace("{", "").replace("}", "-none")


@pytest.fixture(scope="module")
def client(settings, example_kb, tmp_path_factory):
    data = tmp_path_factory.mktemp("errors") / "data"
    with (
        pilot_over_own_store(settings, example_kb, data, *acme_team(), roles="evidence") as (app, _),
        TestClient(app, raise_server_exceptions=False) as client,
    ):
        yield client


def assert_error_shape(answer) -> ErrorBody:
    """The envelope, which refuses a second spelling of the field at fault (``error.field``)."""
    assert answer.status_code >= 400, (answer.request.url, answer.status_code, answer.text[:200])
    assert answer.headers["content-type"].startswith("application/json"), answer.headers
    return ErrorBody.model_validate(answer.json())


def named(answer, status: int) -> list[str]:
    """The fields a refusal with ``status`` names, read from the one place they are written."""
    assert answer.status_code == status, (answer.request.url, answer.status_code, answer.text[:300])
    error = assert_error_shape(answer).error
    assert all(d.problem for d in error.details or []), error
    return fields_at_fault(answer)


@pytest.fixture(scope="module")
def session_id(client) -> str:
    opened = client.post("/v1/sessions", json={"customer_id": "c-shape"}, headers=bearer("backend"))
    assert opened.status_code == 201, opened.text
    return opened.json()["session_id"]


def test_every_route_declares_the_error_shape_for_4xx_and_5xx():
    for method, path, operation in OPERATIONS:
        for code in ("4XX", "5XX"):
            content = operation["responses"][code]["content"]["application/json"]
            assert content["schema"] == {"$ref": "#/components/schemas/ErrorBody"}, (method, path)


def test_readyz_is_the_one_answer_outside_the_envelope():
    """A status code of its own, 4xx or 5xx, is the envelope too, but for the probe's 503."""
    outside = [
        (method, path, code)
        for method, path, operation in OPERATIONS
        for code, answer in operation["responses"].items()
        if code[0] in "45" and code not in ("4XX", "5XX")
        if answer.get("content", {}).get("application/json", {}).get("schema")
        not in (None, {"$ref": "#/components/schemas/ErrorBody"})
    ]
    assert outside == [("GET", "/readyz", "503")]


def test_the_envelope_has_one_spelling_of_the_field_at_fault():
    refusal = error_body("unknown_agent", "no staff key named 'x'", field="agent")
    assert refusal == {
        "error": {
            "code": "unknown_agent",
            "message": "no staff key named 'x'",
            "details": [{"field": "agent", "problem": "no staff key named 'x'"}],
        }
    }
    assert ErrorBody.model_validate(refusal).error.details
    with pytest.raises(ValidationError, match="details"):
        ErrorBody.model_validate({"error": {"code": "c", "message": "m", "field": "agent"}})
    with pytest.raises(ValueError, match="field="):
        ApiError(422, "c", "m", {"field": "agent"})
    spent = ApiError(429, "rate_limited", "later", {"retry_after_s": 3}).body()
    assert spent == {"error": {"code": "rate_limited", "message": "later", "retry_after_s": 3}}


@pytest.mark.parametrize(("method", "path", "operation"), OPERATIONS, ids=lambda v: str(v)[:60])
def test_a_request_without_a_key_gets_the_error_shape(client, method, path, operation):
    if path in OPEN or not path.startswith("/v1/"):
        pytest.skip("a page or an open probe: no key is asked for")
    answer = client.request(method, concrete(path), json={})
    assert answer.status_code == 401
    assert assert_error_shape(answer).error.code == "unauthorized"


@pytest.mark.parametrize(("method", "path", "operation"), OPERATIONS, ids=lambda v: str(v)[:60])
def test_a_body_that_is_not_json_names_the_body(client, method, path, operation):
    if "requestBody" not in operation or not path.startswith("/v1/"):
        pytest.skip("the route reads no body")
    for key in ("backend", "ana", "lead"):
        answer = client.request(
            method,
            concrete(path),
            content=b"{not json",
            headers={**bearer(key), "Content-Type": "application/json"},
        )
        error = assert_error_shape(answer).error
        if answer.status_code == 422:
            assert error.code == "invalid_request"
            assert error.details and error.details[0].field == "body", error
            return
    pytest.fail(f"{method} {path}: no key reached the body ({answer.status_code} {answer.text[:200]})")


def test_a_field_of_the_wrong_type_is_named(client):
    answer = client.post(
        "/v1/sessions/none/feedback",
        json={"turn_index": "first", "rating": "up"},
        headers=bearer("backend"),
    )
    error = assert_error_shape(answer).error
    assert answer.status_code == 422 and [d.field for d in error.details or []] == ["turn_index"]


def test_an_unknown_session_and_a_staff_route_for_a_customer_key_get_the_error_shape(client):
    unknown = client.get("/v1/sessions/nobody", headers=bearer("backend"))
    assert unknown.status_code == 404 and assert_error_shape(unknown).error.code
    staff = client.get("/v1/handoffs", headers=bearer("backend"))
    assert staff.status_code == 403 and assert_error_shape(staff).error.code


def test_refusals_of_routes_name_the_field_as_validation_does(client, session_id):
    """Each refusal that is about one field of the request names it where validation does."""
    lead, backend = bearer("lead"), bearer("backend")
    assign = f"/v1/handoffs/{session_id}/assign"
    assert named(client.post(assign, json={"agent": "nobody"}, headers=lead), 422) == ["agent"]
    assert named(client.post(assign, json={"agent": ""}, headers=lead), 422) == ["agent"]
    gaps = client.get("/v1/reports/gaps?since=last-week", headers=lead)
    assert named(gaps, 422) == ["since"]
    assert named(client.get("/v1/reports/gaps?limit=0", headers=lead), 422) == ["limit"]
    opened = client.post("/v1/sessions", json={"slots": {"colour": "red"}}, headers=backend)
    assert named(opened, 422) == ["slots.colour"]
    enforced = client.post("/v1/sessions", json={"slots": {"tier": "pro"}}, headers=backend)
    assert named(enforced, 403) == ["slots.tier"]
    rate = f"/v1/sessions/{session_id}/feedback"
    unknown = client.post(rate, json={"turn_index": 7, "rating": "up"}, headers=backend)
    assert named(unknown, 404) == ["turn_index"]
    assert named(client.post(rate, json={"turn_index": -1, "rating": "up"}, headers=backend), 422) == [
        "turn_index"
    ]


def test_an_article_refusal_names_its_field_with_what_else_it_says(client):
    draft = {"slug": "runbook", "title": "Runbook", "text": "# Runbook\n\nSteps.", "access": "x"}
    refused = client.post("/v1/articles", json=draft, headers=bearer("lead"))
    assert named(refused, 422) == ["access"]


@examples_over_a_fixture(25)
@given(agent=st.text(max_size=220))
def test_any_agent_that_is_no_staff_key_is_named_once(client, session_id, agent):
    """The route's own refusal (no such staff key) and validation (empty, too long, control
    characters) name ``agent`` the same way."""
    if agent in ("ana", "lead"):
        return
    answer = client.post(
        f"/v1/handoffs/{session_id}/assign", json={"agent": agent}, headers=bearer("lead")
    )
    assert named(answer, 422) == ["agent"]


@examples_over_a_fixture(25)
@given(since=st.text(max_size=40))
def test_any_since_is_taken_or_named(client, since):
    answer = client.get("/v1/reports/gaps", params={"since": since}, headers=bearer("lead"))
    if answer.status_code != 200:
        assert named(answer, 422) == ["since"]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=5,
)


@examples_over_a_fixture(30)
@given(turn_index=JSON, rating=JSON)
def test_any_rating_is_refused_naming_only_fields_of_the_body(client, session_id, turn_index, rating):
    """A session without replies takes no rating: whatever is sent, the answer names fields
    of the body (validation's, or the route's ``turn_index``), in one place."""
    answer = client.post(
        f"/v1/sessions/{session_id}/feedback",
        json={"turn_index": turn_index, "rating": rating},
        headers=bearer("backend"),
    )
    fields = named(answer, answer.status_code)
    assert answer.status_code in (404, 422) and fields, answer.text
    assert {f.split(".")[0] for f in fields} <= {"turn_index", "rating"}, fields
