"""The deploy recipe (deploy/nginx/supportcrew.conf) run by Debian's nginx in front of the
pilot: answers and server-sent events pass through unbuffered, a body over the cap and a
flood from one client address are refused by nginx in the service's JSON shape while other
addresses go on, and the service still knows its own origin behind the proxy."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

from deploy.nginx_local import NGINX, _listening, nginx_in_front, site_for
from tests.conftest import REPO
from tests.helpers import (
    REFUND,
    acme_team,
    answering_llm,
    bearer,
    free_port,
    pilot_over_own_store,
    running_server,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not os.path.exists(NGINX) and os.environ.get("CI") != "true",
        reason="Debian nginx is not installed (CI installs it)",
    ),
]


def from_address(address: str, base: str, **kwargs) -> httpx.Client:
    """A client whose requests leave from ``address`` (any 127.x.y.z is this machine)."""
    return httpx.Client(
        base_url=base, transport=httpx.HTTPTransport(local_address=address), timeout=60, **kwargs
    )


def slow_draft(prompt: str) -> dict:
    """The responder's draft after half a second: the turn's first steps have long been sent
    when the answer comes, unless something on the way holds them back."""
    time.sleep(0.5)
    return {"answer": REFUND, "passage_ids": [1], "handoff": False}


@pytest.fixture
def proxied(settings, example_kb, tmp_path):
    llm = answering_llm(DraftAnswer=[slow_draft])
    data = tmp_path / "data"
    with (
        pilot_over_own_store(settings, example_kb, data, *acme_team(), llm=llm) as (app, _),
        running_server(app) as (service, _server),
    ):
        port = int(service.rsplit(":", 1)[1])
        with nginx_in_front([port], free_port()) as base:
            yield base


def test_the_site_file_is_rendered_only_in_its_listen_line_and_upstream():
    rendered = site_for([9001, 9002], 8088)
    assert "listen 127.0.0.1:8088;" in rendered and "listen 80;" not in rendered
    assert "server 127.0.0.1:9001;\n    server 127.0.0.1:9002;\n    keepalive 32;" in rendered
    assert "limit_req zone=supportcrew_per_client burst=20 nodelay;" in rendered


def test_answers_and_streamed_steps_pass_through_nginx_unbuffered(proxied):
    with from_address("127.0.0.1", proxied, headers=bearer("backend")) as http:
        session = http.post("/v1/sessions", json={"customer_id": "c-1"}).json()["session_id"]
        said = http.post(
            f"/v1/sessions/{session}/messages", json={"message": "How long does a refund take?"}
        )
        assert said.status_code == 200 and said.json()["verdict"] == "answered"
        arrivals: list[tuple[float, str]] = []
        with http.stream(
            "POST",
            f"/v1/sessions/{session}/messages",
            json={"message": "How long does a refund take?"},
            headers={"Accept": "text/event-stream"},
        ) as events:
            assert events.headers["content-type"].startswith("text/event-stream")
            for line in events.iter_lines():
                if line.startswith("event: "):
                    arrivals.append((time.perf_counter(), line.removeprefix("event: ")))
    names = [name for _, name in arrivals]
    assert names[-1] == "result" and names.count("step") >= 3, names
    # the first step reached the client before the responder's half second: nothing held
    # it back until the answer
    first_step = next(t for t, name in arrivals if name == "step")
    assert arrivals[-1][0] - first_step > 0.4, arrivals


def test_nginx_refuses_a_flood_from_one_address_and_serves_the_others(proxied):
    with from_address("127.0.0.2", proxied) as flood:
        statuses = [flood.get("/healthz").status_code for _ in range(80)]
        refused = flood.get("/healthz")
    assert statuses.count(429) >= 40, statuses
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "rate_limited" and refused.headers["retry-after"] == "1"
    with from_address("127.0.0.3", proxied, headers=bearer("backend")) as customer:
        assert customer.get("/healthz").status_code == 200
        assert customer.post("/v1/sessions", json={}).status_code == 201


def test_a_large_response_passes_whole(proxied):
    """The OpenAPI schema (39 kB, more than nginx's 32 kB of proxy buffers) arrives whole."""
    with from_address("127.0.0.6", proxied) as http:
        schema = http.get("/openapi.json")
    assert schema.status_code == 200 and len(schema.content) > 32 * 1024
    assert "/v1/widget/sessions" in schema.json()["paths"]


def test_a_body_over_the_cap_is_refused_by_nginx_in_json(proxied):
    with from_address("127.0.0.4", proxied, headers=bearer("backend")) as http:
        big = http.post(
            "/v1/sessions", content=b"x" * 200_000, headers={"Content-Type": "application/json"}
        )
    assert big.status_code == 413
    assert big.json()["error"]["code"] == "too_large"


def test_behind_nginx_the_service_still_knows_its_own_origin(proxied):
    with from_address("127.0.0.5", proxied, headers=bearer("backend")) as http:
        own = http.post("/v1/sessions", json={}, headers={"Origin": proxied})
        other = http.post("/v1/sessions", json={}, headers={"Origin": "https://elsewhere.example"})
    assert own.status_code == 201, own.text
    assert other.status_code == 403


WIDGET_SITE = "https://help.example.com"  # the origin the shipped site file lists


def test_nginx_refusals_carry_the_cors_header_of_allowed_origins_only(proxied):
    with from_address("127.0.0.7", proxied) as flood:
        for _ in range(60):
            refused = flood.get("/healthz", headers={"Origin": WIDGET_SITE})
            if refused.status_code == 429:
                break
        assert refused.status_code == 429
        assert refused.headers.get("access-control-allow-origin") == WIDGET_SITE
        assert "Retry-After" in refused.headers.get("access-control-expose-headers", "")
        stranger = flood.get("/healthz", headers={"Origin": "https://evil.example"})
        assert stranger.status_code == 429 and "access-control-allow-origin" not in stranger.headers
    with from_address("127.0.0.8", proxied) as http:
        big = http.post("/v1/widget/sessions", content=b"x" * 200_000, headers={"Origin": WIDGET_SITE})
    assert big.status_code == 413 and big.headers.get("access-control-allow-origin") == WIDGET_SITE


def test_nginx_names_no_version(proxied):
    with from_address("127.0.0.9", proxied) as http:
        answered = http.get("/healthz")
        refused = http.post("/v1/sessions", content=b"x" * 200_000)
    for response in (answered, refused):
        assert response.headers.get("server", "nginx") == "nginx", response.headers
    assert "nginx/" not in refused.text


def test_the_local_runner_stops_nginx_on_sigterm(tmp_path):
    port = free_port()
    command = [sys.executable, str(REPO / "deploy" / "nginx_local.py")]
    runner = subprocess.Popen(
        [*command, "--upstream", str(free_port()), "--listen", str(port)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its nginx is in this group: the cleanup below reaches it
    )
    try:
        deadline = time.time() + 20
        while not _listening(port):
            assert time.time() < deadline and runner.poll() is None, runner.stderr.read()
            time.sleep(0.1)
        runner.send_signal(signal.SIGTERM)
        runner.wait(timeout=15)
        deadline = time.time() + 5
        while _listening(port) and time.time() < deadline:
            time.sleep(0.1)
        assert not _listening(port), "nginx still listens after its runner got SIGTERM"
    finally:
        if runner.poll() is None:
            runner.kill()
        with contextlib.suppress(ProcessLookupError):  # an nginx left behind (the bug it catches)
            os.killpg(runner.pid, signal.SIGKILL)


@pytest.mark.serial
def test_a_body_trickled_a_byte_every_six_seconds_is_dropped_by_nginx(proxied):
    """``client_body_timeout`` runs between two reads: short, a trickling client is dropped
    (408) before its next byte, and the deploy recipe's ``send_timeout`` is as short."""
    import socket

    host, port = proxied.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        raw.sendall(
            b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer backend-key\r\n"
            b"Content-Type: application/json\r\nContent-Length: 40\r\n\r\n{"
        )
        started = time.monotonic()
        raw.settimeout(9.0)  # the probe's next byte came after 6 s
        try:
            answer = raw.recv(4096)
        except TimeoutError:
            pytest.fail("nginx still holds a body that stopped arriving 9 s ago")
    assert time.monotonic() - started < 6.0, "dropped only after the trickle's next byte"
    assert answer == b"" or b" 408 " in answer.split(b"\r\n", 1)[0], answer[:80]
    rendered = site_for([9001], 8088)
    assert "client_body_timeout 5s;" in rendered and "send_timeout 10s;" in rendered
