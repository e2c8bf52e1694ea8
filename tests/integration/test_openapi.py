"""The pilot's API as a client sees it: docs/openapi.json is the schema the routes declare (a
changed route without the file fails here), and a client generated from that file
(datamodel-code-generator) reads every answer of a whole conversation, customer and staff
side, and writes it back unchanged."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.openapi import schema_text
from tests.helpers import acme_team, bearer, pilot_over_own_store

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "docs" / "openapi.json"


def test_the_schema_file_is_the_schema_the_routes_declare(settings):
    assert SCHEMA.read_text(encoding="utf-8") == schema_text(settings), (
        "the routes changed: python main.py openapi --output docs/openapi.json"
    )


def test_every_json_route_declares_what_it_answers():
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    bare = []
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            ok = next(
                (operation["responses"][c] for c in ("200", "201") if c in operation["responses"]), {}
            )
            # JSON routes declare their model, the CSV one its media type's schema
            content = [m.get("schema") for m in ok.get("content", {}).values() if m.get("schema")]
            if path != "/metrics" and not content:
                bare.append(f"{method.upper()} {path}")
    assert not bare, bare


@pytest.fixture(scope="module")
def client_models(tmp_path_factory):
    """The models a client generator writes from docs/openapi.json, imported."""
    folder = tmp_path_factory.mktemp("client")
    generator = shutil.which("datamodel-codegen") or str(
        Path(sys.executable).parent / "datamodel-codegen"
    )
    subprocess.run(
        [
            generator,
            "--input",
            str(SCHEMA),
            "--input-file-type",
            "openapi",
            "--output",
            str(folder / "models.py"),
            "--output-model-type",
            "pydantic_v2.BaseModel",
            "--target-python-version",
            "3.11",
            "--formatters",
            "ruff-format",
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    spec = importlib.util.spec_from_file_location("generated_client_models", folder / "models.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def round_trips(model, answer) -> None:
    body = answer.json()
    assert answer.status_code in (200, 201), answer.text
    read = model.model_validate(body)
    assert read.model_dump(mode="json", by_alias=True, exclude_unset=True) == body


def test_a_generated_client_reads_and_writes_back_every_answer(
    client_models, settings, example_kb, tmp_path
):
    m = client_models
    with (
        pilot_over_own_store(
            settings, example_kb, tmp_path / "data", *acme_team(), roles="evidence"
        ) as (
            app,
            _,
        ),
        TestClient(app) as client,
    ):
        customer, agent, lead = bearer("backend"), bearer("ana"), bearer("lead")
        round_trips(m.Health, client.get("/healthz"))
        round_trips(m.Readiness, client.get("/readyz"))
        round_trips(m.KeyInfo, client.get("/v1/me", headers=agent))
        made = client.post("/v1/sessions", json={"customer_id": "c-1"}, headers=customer)
        round_trips(m.NewSessionView, made)
        session = made.json()["session_id"]
        said = client.post(
            f"/v1/sessions/{session}/messages",
            json={"message": "How long does a refund take?"},
            headers=customer,
        )
        round_trips(m.TurnResult, said)
        round_trips(
            m.FeedbackMark,
            client.post(
                f"/v1/sessions/{session}/feedback",
                json={"turn_index": 0, "rating": "up"},
                headers=customer,
            ),
        )
        round_trips(
            m.HandedOff,
            client.post(f"/v1/sessions/{session}/handoff", json={}, headers=customer),
        )
        round_trips(m.SessionDetail, client.get(f"/v1/sessions/{session}", headers=customer))
        round_trips(m.QueuePage, client.get("/v1/handoffs", headers=agent))
        round_trips(m.DeskChange, client.post(f"/v1/handoffs/{session}/take", headers=agent))
        round_trips(m.Conversation, client.get(f"/v1/handoffs/{session}", headers=agent))
        round_trips(
            m.AgentReply,
            client.post(
                f"/v1/sessions/{session}/agent-messages", json={"message": "Done."}, headers=agent
            ),
        )
        round_trips(
            m.Resolved,
            client.post(f"/v1/sessions/{session}/resolve", json={"note": "refund sent"}, headers=agent),
        )
        round_trips(m.GapReportPage, client.get("/v1/reports/gaps", headers=lead))
        round_trips(m.OutcomeReport, client.get("/v1/reports/outcomes", headers=lead))
        round_trips(
            m.SearchResponse, client.post("/v1/search", json={"query": "refund"}, headers=customer)
        )
        refused = client.post(
            f"/v1/sessions/{session}/feedback",
            json={"turn_index": "first", "rating": "up"},
            headers=customer,
        )
        read = m.ErrorBody.model_validate(refused.json())
        assert refused.status_code == 422 and read.error.details[0].field == "turn_index"
        assert read.model_dump(mode="json", exclude_unset=True) == refused.json()
