"""A remote, tool-calling model (any OpenAI-compatible endpoint): the retriever agent calls the
search tool natively, on both engines, and the usage the endpoint reports lands in the trace.

The endpoint is a small OpenAI-compatible test double on loopback that answers from what each
request contains: with the search tool offered it calls it, with a schema it fills it."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from agents.build import build_engine
from agents.llm import structured_output
from agents.llm.factory import build_llm
from agents.runtime import TurnRuntime
from agents.turn import run_turn
from config.settings import LlmSettings
from storage.retrieval.retriever import QdrantRetriever
from tasks.evidence import EvidenceScorer
from tasks.schemas import TurnRequest
from tests.helpers import REFUND, free_port, send_completion, send_json

pytestmark = pytest.mark.integration


def reply_for(body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages", [])
    text = " ".join(str(m.get("content") or "") for m in messages)
    tools = [t["function"]["name"] for t in body.get("tools") or []]
    if "search_knowledge_base" in tools and messages[-1].get("role") != "tool":
        call = {
            "id": "call_1",
            "type": "function",
            "function": {
                "name": "search_knowledge_base",
                "arguments": json.dumps({"queries": ["refund processing time"]}),
            },
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    if "Do these passages answer" in text:
        content = {"verdict": "sufficient", "reason": "it says", "rewrite_hint": ""}
    elif "Answer in one to three sentences" in text:
        content = {"answer": REFUND, "passage_ids": [1], "handoff": False}
    elif "Rewrite the latest message" in text:
        content = {"standalone_query": "refund time", "expansions": []}
    else:
        content = {"note": "nothing asked"}
    return {"role": "assistant", "content": json.dumps(content)}


class OpenAICompatible(BaseHTTPRequestHandler):
    seen: ClassVar[list[dict[str, Any]]] = []
    refuse_json_schema: ClassVar[bool] = False  # as llama.cpp's server does: HTTP 500
    busy_s: ClassVar[float] = 0.0  # as a server still busy with another client's long request

    def do_GET(self) -> None:  # /v1/models: the reachability check at start
        send_json(self, {"object": "list", "data": [{"id": "test-model", "object": "model"}]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        OpenAICompatible.seen.append(body)
        time.sleep(OpenAICompatible.busy_s)
        kind = (body.get("response_format") or {}).get("type")
        if OpenAICompatible.refuse_json_schema and kind == "json_schema":
            send_json(self, {"error": {"message": "json_schema not supported"}}, status=500)
            return
        send_completion(
            self,
            body,
            reply_for(body),
            {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        )

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def endpoint(monkeypatch):
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), OpenAICompatible)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    OpenAICompatible.seen = []
    OpenAICompatible.refuse_json_schema = False
    OpenAICompatible.busy_s = 0.0
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def remote_runtime(settings, example_kb, remote: LlmSettings, llm: Any, engine: str) -> TurnRuntime:
    """A turn runtime over the example KB with ``llm`` (built from ``remote``) in the roles."""
    return TurnRuntime(
        settings.model_copy(update={"llm": remote}),
        QdrantRetriever(kb=example_kb),
        build_engine(engine, llm, "sequential"),
        EvidenceScorer(example_kb.encoders, settings.evidence, example_kb.term_statistics),
    )


def ask_refund(runtime: TurnRuntime) -> Any:
    return run_turn(
        TurnRequest(
            session_id="r",
            customer_id="c-1",
            message="How long does a refund take?",
            slots={"tier": "basic", "access_level": "customer"},
        ),
        runtime,
    )


@pytest.mark.parametrize("engine", ["crewai", "autogen"])
def test_a_remote_model_calls_the_search_tool_natively(endpoint, settings, example_kb, engine):
    remote = LlmSettings(provider="openai/test-model", base_url=endpoint)
    llm = build_llm(remote)
    assert llm.structured_output == "json_schema"  # the probe's first choice was accepted
    OpenAICompatible.seen = []
    # provider openai/...: roles on auto take the model path
    result = ask_refund(remote_runtime(settings, example_kb, remote, llm, engine))
    assert result.verdict == "answered" and result.answer == REFUND, result.trace.notes
    [retrieve] = [s for s in result.trace.steps if s.name == "retrieve"]
    assert retrieve.detail["searched_by"] == "retriever agent"
    assert "refund processing time" in retrieve.detail["queries"]
    offered = [b for b in OpenAICompatible.seen if b.get("tools")]
    assert offered and offered[0]["tools"][0]["function"]["name"] == "search_knowledge_base"
    assert result.trace.llm_calls == len(OpenAICompatible.seen) == 2  # retriever, responder
    # streamed (llm.stream), the usage read from the stream's last chunk
    assert all(
        b["stream"] and b["stream_options"] == {"include_usage": True} for b in OpenAICompatible.seen
    )
    assert result.trace.prompt_tokens == 200 and result.trace.completion_tokens == 20
    assert [c.role for c in result.trace.calls] == ["retriever", "responder"]


@pytest.mark.parametrize("engine", ["crewai", "autogen"])
def test_a_server_refusing_json_schema_is_asked_for_json_objects(endpoint, settings, example_kb, engine):
    OpenAICompatible.refuse_json_schema = True
    remote = LlmSettings(provider="openai/test-model", base_url=endpoint)
    llm = build_llm(remote)  # structured_output: auto probes the server once
    assert llm.structured_output == "json_object"
    probes = len(OpenAICompatible.seen)
    result = ask_refund(remote_runtime(settings, example_kb, remote, llm, engine))
    assert result.verdict == "answered" and result.answer == REFUND, result.trace.notes
    asked = OpenAICompatible.seen[probes:]
    kinds = {(b.get("response_format") or {}).get("type") for b in asked}
    assert "json_schema" not in kinds and "json_object" in kinds
    assert all("schema" in b["response_format"] for b in asked if b.get("response_format"))
    assert not [n for n in result.trace.notes if "failed" in n]


@pytest.mark.serial
def test_a_busy_server_holds_the_start_for_one_probe_timeout_only(endpoint, monkeypatch):
    """A probe that times out says nothing about the modes: no second probe waits too, and the
    prompt's own JSON instructions (``none``, which every server takes) are used."""
    monkeypatch.setattr(structured_output, "PROBE_TIMEOUT_S", 0.3)
    OpenAICompatible.busy_s = 1.0
    started = time.monotonic()
    llm = build_llm(LlmSettings(provider="openai/test-model", base_url=endpoint))
    assert llm.structured_output == "none"
    assert len(OpenAICompatible.seen) == 1  # json_object was never tried after the timeout
    assert time.monotonic() - started < 1.0
