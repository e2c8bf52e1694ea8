"""One error shape: every route of docs/openapi.json, sent a request without a key, with a
key of another role, and with a body that is not JSON, answers a 4xx whose body is
``service.errors.ErrorBody`` (``{"error": {"code", "message", "details"?}}``), as the schema
declares for every route; a body that is not valid names the field at fault."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.errors import ErrorBody
from tests.helpers import acme_team, bearer, pilot_over_own_store

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
    assert answer.status_code >= 400, (answer.request.url, answer.status_code, answer.text[:200])
    assert answer.headers["content-type"].startswith("application/json"), answer.headers
    return ErrorBody.model_validate(answer.json())


def test_every_route_declares_the_error_shape_for_4xx_and_5xx():
    for method, path, operation in OPERATIONS:
        for code in ("4XX", "5XX"):
            content = operation["responses"][code]["content"]["application/json"]
            assert content["schema"] == {"$ref": "#/components/schemas/ErrorBody"}, (method, path)


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
