"""What the team's monitoring reads of the pilot: /metrics in Prometheus text (parsed here by
the client's own parser), summed over several worker processes; one OpenTelemetry span a turn
with its steps' spans; JSON log lines with the session and, unless configured, no customer
words."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from config.settings import ApiKey
from service.auth import hash_key
from service.logs import JsonLines
from service.tracing import TurnTracer
from tests.helpers import acme_team, bearer, free_port, pilot_over_own_store

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
QUESTION = "How long does a refund take?"


def observed(settings, **changes):
    observability = settings.observability.model_copy(update=changes)
    limits = settings.pilot.limits.model_copy(update={"sessions": "3/minute"})
    pilot = settings.pilot.model_copy(update={"limits": limits})
    return settings.model_copy(update={"observability": observability, "pilot": pilot})


@pytest.fixture
def service(settings, example_kb, tmp_path):
    """(client, app) of a pilot whose turns' spans go to an in-memory exporter."""
    configured = observed(settings, metrics_port=free_port())
    keys = (
        *acme_team(),
        ApiKey(name="ops", sha256=hash_key("ops-key"), role="admin"),  # the deployment's
        ApiKey(name="lead", sha256=hash_key("globex-lead-key"), tenant="globex", role="admin"),
        ApiKey(name="backend", sha256=hash_key("globex-backend-key"), tenant="globex"),
    )
    with pilot_over_own_store(configured, example_kb, tmp_path / "data", *keys, roles="evidence") as (
        app,
        _runtime,
    ):
        exporter = InMemorySpanExporter()
        app.state.pilot.tracer = TurnTracer.exporting_to(exporter)
        with TestClient(app) as client:
            yield client, app, exporter


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus text exposition: (name, sorted labels) -> value."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def ask(client, question: str = QUESTION) -> dict:
    session = client.post("/v1/sessions", json={"customer_id": "c-1"}, headers=bearer("backend"))
    said = client.post(
        f"/v1/sessions/{session.json()['session_id']}/messages",
        json={"message": question},
        headers=bearer("backend"),
    )
    assert said.status_code == 200, said.text
    return said.json()


def test_metrics_show_turns_by_verdict_steps_waiting_and_refusals(service):
    client, app, _ = service
    before = samples(client.get("/metrics", headers=bearer("ops")).text)
    answered = ask(client)
    handed = ask(client, "I want to talk to a person")
    assert (answered["verdict"], handed["verdict"]) == ("answered", "handoff")
    for _ in range(3):  # the sessions limit is 3 a minute: two used, one left, then 429s
        client.post("/v1/sessions", json={}, headers=bearer("backend"))
    scraped = client.get("/metrics", headers=bearer("ops"))
    assert scraped.status_code == 200
    assert scraped.headers["content-type"].startswith("text/plain")
    after = samples(scraped.text)
    engine = app.state.pilot.runtime.engine.name

    def grew(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    assert grew("supportcrew_turns_total", tenant="acme", verdict="answered", engine=engine) == 1
    assert grew("supportcrew_turns_total", tenant="acme", verdict="handoff", engine=engine) == 1
    assert grew("supportcrew_turn_seconds_count", tenant="acme", engine=engine) == 2
    steps = {
        dict(labels)["step"] for (name, labels) in after if name == "supportcrew_step_seconds_count"
    }
    assert {"retrieve", "evidence_gate", "respond"} <= steps, steps
    assert after[("supportcrew_handoffs_waiting", (("tenant", "acme"),))] == 1
    assert grew("supportcrew_rate_limit_refusals_total", limit="sessions") >= 1
    # staff who are not admins, and customers, read no metrics
    assert client.get("/metrics", headers=bearer("ana")).status_code == 403
    assert client.get("/metrics").status_code == 401
    # the scrape port of its own answers the same without a key
    port = app.state.pilot.settings.observability.metrics_port
    unkeyed = samples(httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text)
    assert unkeyed[("supportcrew_handoffs_waiting", (("tenant", "acme"),))] == 1


def test_a_tenants_admin_reads_only_its_own_tenants_metrics(service):
    client, _, _ = service
    for key in ("backend", "globex-backend"):  # a conversation waits in each tenant
        session = client.post("/v1/sessions", json={}, headers=bearer(key)).json()["session_id"]
        client.post(f"/v1/sessions/{session}/handoff", json={}, headers=bearer(key))
    acme = client.get("/metrics", headers=bearer("lead"))
    assert acme.status_code == 200
    mine = samples(acme.text)
    assert mine[("supportcrew_handoffs_waiting", (("tenant", "acme"),))] == 1.0, mine
    assert "globex" not in acme.text
    assert all(dict(labels).get("tenant") == "acme" for _, labels in mine), mine
    globex = samples(client.get("/metrics", headers=bearer("globex-lead")).text)
    assert globex[("supportcrew_handoffs_waiting", (("tenant", "globex"),))] == 1.0
    assert all(dict(labels).get("tenant") == "globex" for _, labels in globex), globex
    everyone = samples(client.get("/metrics", headers=bearer("ops")).text)
    assert everyone[("supportcrew_handoffs_waiting", (("tenant", "globex"),))] == 1.0
    assert everyone[("supportcrew_handoffs_waiting", (("tenant", "acme"),))] == 1.0


def test_a_tenants_admin_reads_its_own_turns_by_verdict_and_their_latencies(service):
    """Since /metrics became per tenant, a tenant's admin read only the waiting conversations;
    its own turns by verdict and their latencies are labelled with it now, and only its."""
    client, app, _ = service
    ask(client)  # acme's
    session = client.post("/v1/sessions", json={}, headers=bearer("globex-backend")).json()
    client.post(
        f"/v1/sessions/{session['session_id']}/messages",
        json={"message": QUESTION},
        headers=bearer("globex-backend"),
    )
    engine = app.state.pilot.runtime.engine.name
    acme = client.get("/metrics", headers=bearer("lead")).text
    mine = samples(acme)
    assert (
        mine[
            (
                "supportcrew_turns_total",
                (("engine", engine), ("tenant", "acme"), ("verdict", "answered")),
            )
        ]
        >= 1
    )
    assert mine[("supportcrew_turn_seconds_count", (("engine", engine), ("tenant", "acme")))] >= 1
    assert any(name == "supportcrew_turn_seconds_bucket" for name, _ in mine)
    assert "globex" not in acme
    assert all(dict(labels).get("tenant") == "acme" for _, labels in mine)
    everyone = samples(client.get("/metrics", headers=bearer("ops")).text)
    tenants = {
        dict(labels).get("tenant") for name, labels in everyone if name == "supportcrew_turns_total"
    }
    assert {"acme", "globex"} <= tenants


def test_one_span_a_turn_with_its_steps_inside_it_and_no_customer_words(service):
    client, _, exporter = service
    exporter.clear()
    ask(client, "How long does a refund take for my order 12345?")
    spans = exporter.get_finished_spans()
    turns = [s for s in spans if s.name == "supportcrew.turn"]
    assert len(turns) == 1
    turn = turns[0]
    assert turn.attributes["supportcrew.verdict"] == "answered"
    assert turn.attributes["supportcrew.tenant"] == "acme"
    steps = [s for s in spans if s.parent is not None and s.parent.span_id == turn.context.span_id]
    names = [s.name for s in sorted(steps, key=lambda s: s.start_time)]
    assert {"supportcrew.step.retrieve", "supportcrew.step.evidence_gate"} <= set(names), names
    for step in steps:
        assert turn.start_time <= step.start_time <= step.end_time <= turn.end_time, step.name
    assert sum(s.end_time - s.start_time for s in steps) <= turn.end_time - turn.start_time
    words = json.dumps([dict(s.attributes) for s in spans])
    assert "12345" not in words and "refund" not in words


@pytest.mark.parametrize("with_text", [False, True])
def test_json_log_lines_name_the_session_and_keep_the_words_out_unless_configured(
    settings, example_kb, tmp_path, with_text
):
    configured = observed(settings, json_logs=True, log_message_text=with_text)
    lines = io.StringIO()
    handler = logging.StreamHandler(lines)
    handler.setFormatter(JsonLines())
    turns = logging.getLogger("supportcrew.turns")
    turns.addHandler(handler)
    turns.setLevel(logging.INFO)
    try:
        with (
            pilot_over_own_store(
                configured, example_kb, tmp_path / "data", *acme_team(), roles="evidence"
            ) as (app, _),
            TestClient(app) as client,
        ):
            answered = ask(client, "How long does a refund take for order 98765?")
    finally:
        turns.removeHandler(handler)
    logged = [json.loads(line) for line in lines.getvalue().splitlines()]
    assert len(logged) == 1
    line = logged[0]
    assert line["session_id"] == answered["session_id"]
    assert line["verdict"] == answered["verdict"] and line["level"] == "info" and line["ms"] > 0
    assert ("98765" in json.dumps(line)) is with_text


def test_metrics_of_several_worker_processes_are_summed(tmp_path, monkeypatch):
    """Two worker processes count turns into one multiprocess folder; a scrape reads both."""
    folder = tmp_path / "prometheus"
    folder.mkdir()
    worker = (
        "from service.metrics import record_turn\n"
        "from tasks.schemas import TurnResult\n"
        "record_turn(TurnResult(session_id='s', answer='a', verdict='answered'), 'crewai', 0.3)\n"
    )
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(folder)}
    for _ in range(2):
        subprocess.run([sys.executable, "-c", worker], cwd=ROOT, env=env, check=True, timeout=120)
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(folder))
    from prometheus_client import generate_latest

    from service.metrics_scrape import registry_for

    class NoStore:
        store = None

    scraped = samples(generate_latest(registry_for(NoStore())).decode())
    key = ("supportcrew_turns_total", (("engine", "crewai"), ("tenant", ""), ("verdict", "answered")))
    assert scraped[key] == 2
    assert scraped[("supportcrew_turn_seconds_count", (("engine", "crewai"), ("tenant", "")))] == 2
