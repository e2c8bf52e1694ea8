"""Model-server faults are model faults, on both engines: a server that is down after start,
hangs, answers HTTP 500 or answers garbage gives the evidence outcome within the turn's
deadline, a trace note naming the model server, every request in the trace, and never the
"trouble reaching our knowledge base" reply. A server down at start is one error at start.

The servers are small loopback test doubles (what a real server cannot be made to do)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from agents.llm.factory import LlmConfigError, build_llm
from agents.runtime import TurnRuntime
from config.settings import LlmSettings
from tests.helpers import REFUND, free_port, send_json
from tests.integration.test_remote_model import ask_refund, remote_runtime

pytestmark = pytest.mark.integration
TIMEOUT_S = 4.0


class Faulty(BaseHTTPRequestHandler):
    mode: ClassVar[str] = "500"
    requests: ClassVar[int] = 0
    streamed: ClassVar[int] = 0  # requests that asked for a stream
    streams_closed: ClassVar[list[float]] = []  # when a client closed an endless stream

    def do_GET(self) -> None:  # /v1/models: the reachability check at start
        send_json(self, {"object": "list", "data": [{"id": "m", "object": "model"}]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Faulty.requests += 1
        Faulty.streamed += bool(body.get("stream"))
        if Faulty.mode == "hang":
            time.sleep(30)
            return
        if Faulty.mode == "endless_stream":
            self.stream_forever()
            return
        if Faulty.mode == "500":
            send_json(self, {"error": {"message": "boom"}}, status=500)
            return
        data = b"<html>not a completion</html>"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def stream_forever(self) -> None:
        """A reply that keeps streaming a token every 0.1 s (a model that will not stop), until
        the client closes the stream."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        chunk = {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "delta": {"content": "and "}, "finish_reason": None}],
        }
        try:
            for _ in range(600):
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
                time.sleep(0.1)
        except OSError:  # the client closed the stream
            Faulty.streams_closed.append(time.monotonic())

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def server():
    running = ThreadingHTTPServer(("127.0.0.1", free_port()), Faulty)
    running.daemon_threads = True
    threading.Thread(target=running.serve_forever, daemon=True).start()
    Faulty.requests = 0
    Faulty.streamed = 0
    Faulty.streams_closed = []
    yield running
    running.shutdown()


def runtime_for(settings, example_kb, engine: str, base_url: str) -> TurnRuntime:
    remote = LlmSettings(provider="openai/m", base_url=base_url)
    return remote_runtime(
        settings.model_copy(update={"turn_timeout_s": TIMEOUT_S}),
        example_kb,
        remote,
        build_llm(remote, check=False),
        engine,
    )


@pytest.mark.serial
@pytest.mark.parametrize("engine", ["crewai", "autogen"])
@pytest.mark.parametrize("mode", ["down", "hang", "500", "garbage"])
def test_a_faulty_model_server_gives_the_evidence_outcome_in_time(
    server, settings, example_kb, engine, mode, monkeypatch
):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a local server needs none
    Faulty.mode = mode
    url = (
        f"http://127.0.0.1:{free_port()}/v1"
        if mode == "down"
        else f"http://127.0.0.1:{server.server_address[1]}/v1"
    )
    result = ask_refund(runtime_for(settings, example_kb, engine, url))
    assert result.verdict == "answered", result.trace.notes
    assert REFUND in result.answer
    assert [c.source_id for c in result.citations] == ["billing/refunds.md"]
    notes = " ".join(result.trace.notes)
    assert "model server" in notes and "knowledge base" not in result.answer
    assert result.trace.duration_ms < (TIMEOUT_S + 1.0) * 1000
    failed = [c for c in result.trace.calls if c.ms > 0]
    assert result.trace.llm_calls >= 1 and failed  # every request is in the trace, timed
    if mode != "down":
        assert result.trace.llm_calls == Faulty.requests


@pytest.mark.serial
@pytest.mark.parametrize("engine", ["crewai", "autogen"])
def test_a_reply_still_streaming_at_the_deadline_is_cut_and_its_stream_closed(
    server, settings, example_kb, engine, monkeypatch
):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    Faulty.mode = "endless_stream"
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    result = ask_refund(runtime_for(settings, example_kb, engine, url))
    ended = time.monotonic()
    assert result.verdict == "answered" and REFUND in result.answer, result.trace.notes
    assert result.trace.duration_ms < (TIMEOUT_S + 1.0) * 1000
    assert "still streaming at the turn's deadline" in " ".join(result.trace.notes)
    time.sleep(0.5)  # the server notices at its next write
    # every streamed request was closed by the client, none left generating after the turn
    assert Faulty.requests >= 1 and Faulty.streamed == Faulty.requests
    assert len(Faulty.streams_closed) == Faulty.requests
    assert max(Faulty.streams_closed) < ended + 0.5
    assert result.trace.llm_calls == Faulty.requests


def test_a_server_down_at_start_is_one_error_at_start():
    with pytest.raises(LlmConfigError, match="unreachable"):
        build_llm(LlmSettings(provider="openai/m", base_url=f"http://127.0.0.1:{free_port()}/v1"))
