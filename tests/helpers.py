"""Small helpers shared by tests that run real servers on loopback."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def running_server(app: Any, header_timeout_s: float = 10.0) -> Iterator[tuple[str, Any]]:
    """Serve ``app`` as ``main.py serve`` does, on a free loopback port; yields (base url,
    server)."""
    import uvicorn

    from service.header_timeout import server_config

    port = free_port()
    pilot = getattr(getattr(app, "state", None), "pilot", None)
    proxies = pilot.settings.pilot.trusted_proxies if pilot is not None else ("127.0.0.1", "::1")
    config = server_config(
        app, "127.0.0.1", port, header_timeout_s, log_level="warning", trusted_proxies=proxies
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started and time.time() < deadline:
        time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}", server
    finally:
        server.should_exit = True
        thread.join(timeout=10)


REFUND = (
    "Once a refund is approved, the money is returned to the original payment method "
    "within 5 to 7 business days."
)


def answering_llm(**more: Any) -> Any:
    """The scripted test double judging 'sufficient' and drafting the refund sentence."""
    from tests.scripted_llm import ScriptedLLM

    replies = {
        "Judgement": [{"verdict": "sufficient", "reason": "ok"}],
        "DraftAnswer": [{"answer": REFUND, "passage_ids": [1], "handoff": False}],
        **more,
    }
    return ScriptedLLM(model="scripted").script(**replies)


def model_roles(settings: Any, choice: str = "model") -> Any:
    """``settings`` with every role on ``choice`` (model: the test double is asked)."""
    roles = settings.roles.model_copy(
        update=dict.fromkeys(("reformulate", "retrieve", "judge", "respond"), choice)
    )
    return settings.model_copy(update={"roles": roles})


def scripted_runtime(
    settings: Any,
    kb: Any,
    llm: Any,
    memory_store: Any = None,
    engine: str = "crewai",
    process: str = "sequential",
    roles: str = "model",
) -> Any:
    """A TurnRuntime over a real knowledge base, with ``llm`` (a test double) in the roles
    (every role on the model path unless ``roles`` says otherwise)."""
    settings = model_roles(settings, roles)
    from agents.build import build_engine
    from agents.runtime import TurnRuntime
    from storage.memory import MemoryStore
    from storage.retrieval.retriever import QdrantRetriever
    from tasks.evidence import EvidenceScorer

    memory = MemoryStore(memory_store, kb.encoders) if memory_store is not None else None
    return TurnRuntime(
        settings,
        QdrantRetriever(kb=kb),
        build_engine(engine, llm, process),
        EvidenceScorer(kb.encoders, settings.evidence, kb.term_statistics),
        memory,
    )


def deadline_for_this_machine(base_s: float) -> float:
    """A turn deadline for end-to-end tests: ``base_s`` on a quiet machine, stretched by the
    share of the cores this test will get when it starts (the 1-minute load average, plus the
    test itself, per core), so an outcome never depends on what else runs beside the tests.

    >>> deadline_for_this_machine(12.0) >= 12.0
    True
    """
    busy = (os.getloadavg()[0] + 1) / (os.cpu_count() or 1)
    return round(base_s * max(1.0, busy), 1)


def with_api_keys(settings: Any, *keys: Any) -> Any:
    """Settings whose pilot accepts exactly ``keys``."""
    return settings.model_copy(
        update={"pilot": settings.pilot.model_copy(update={"api_keys": list(keys)})}
    )


def _line_after(prompt: str, label: str) -> str:
    for line in prompt.splitlines():
        if label in line:
            return line.split(label, 1)[1].strip().strip('"')
    return ""


def _first_passage_sentence(prompt: str) -> tuple[str, int]:
    """The first sentence of the first numbered passage in a prompt, and its number."""
    import re

    found = re.search(r"\[(\d+)\] [^:\n]*: (.+)", prompt)
    if not found:
        return "", 0
    sentence = re.split(r"(?<=[.!?])\s", found.group(2).strip())[0]
    return sentence, int(found.group(1))


def prompt_driven_llm() -> Any:
    """A test double whose every reply is computed from the prompt it is sent.

    The retriever searches the words of its task, the judge says 'sufficient' only when the
    question's content words appear in the passages shown, the responder copies the first
    passage's first sentence, the reformulator joins the last customer message to the new
    one. So an engine that renders a role's inputs differently gets different outputs.
    """
    from tests.scripted_llm import ScriptedLLM

    def search(prompt: str) -> dict:
        queries = _line_after(prompt, "search tool for:") or "help"
        return {"name": "search_knowledge_base", "arguments": {"queries": [queries[:200]]}}

    def judge(prompt: str) -> dict:
        question = _line_after(prompt, "Customer question:").lower()
        passages = prompt.split("Passages:", 1)[-1].lower()
        words = [w.strip("?.,") for w in question.split() if len(w) > 4]
        hits = sum(w in passages for w in words)
        verdict = "sufficient" if words and hits * 2 >= len(words) else "insufficient"
        return {"verdict": verdict, "reason": f"{hits} of {len(words)} words"}

    def respond(prompt: str) -> dict:
        sentence, number = _first_passage_sentence(prompt)
        return {"answer": sentence, "passage_ids": [number] if number else []}

    def reformulate(prompt: str) -> dict:
        latest = _line_after(prompt, "Latest message:")
        earlier = [
            line.split("Customer:", 1)[1].strip()
            for line in prompt.splitlines()
            if line.strip().startswith("Customer:")
        ]
        return {"standalone_query": " ".join([*earlier[-1:], latest])[:300], "expansions": []}

    return ScriptedLLM(model="scripted").script(
        tools=[search], Judgement=[judge], DraftAnswer=[respond], Reformulation=[reformulate]
    )


def managed_crew_llm(
    draft: str = REFUND, delegate: dict[str, str] | None = None, first: str = "Knowledge base retriever"
) -> Any:
    """A test double for CrewAI's hierarchical manager as a model: it delegates to ``first``,
    then to the coworker each delegation names next ("... for <role>." or "goes to <role>."),
    or to ``delegate[that role]`` instead; it gives the final answer once told the turn is
    done. Coworkers answer in their role's JSON shape; the retriever searches."""
    import re

    from tests.scripted_llm import ScriptedLLM

    llm = ScriptedLLM(model="scripted")
    wrong = delegate or {}

    def tools(prompt: str) -> Any:
        names = [t.get("function", t).get("name", "") for t in llm.last_tools]
        if "search_knowledge_base" in names:
            return {"name": "search_knowledge_base", "arguments": {"queries": ["refund time"]}}
        messages = llm.last_messages
        told = str(messages[-1]["content"]) if isinstance(messages, list) else ""
        if isinstance(messages, list) and messages[-1].get("role") == "tool":
            if "final answer" in told:
                return told.split("final answer:", 1)[-1].strip()
            named = re.search(r"(?:, for|goes to) ([A-Z][a-z]+(?: [a-z]+)*)\.", told)
            role = named.group(1) if named else first
        else:
            role = first
        delegate_tool = next(n for n in names if "elegate" in n)
        coworker = wrong.get(role, role)
        return {
            "name": delegate_tool,
            "arguments": {"task": "do your step", "context": "see task", "coworker": coworker},
        }

    return llm.script(
        tools=[tools],
        text=["I have nothing to add."],
        Reformulation=[{"standalone_query": "refund time"}],
        Judgement=[{"verdict": "sufficient", "reason": "it says"}],
        DraftAnswer=[{"answer": draft, "passage_ids": [1]}],
    )


def send_json(handler: Any, payload: dict[str, Any], status: int = 200) -> None:
    """Answer a ``BaseHTTPRequestHandler`` request with JSON (the test servers' replies)."""
    import json

    data = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def send_completion(
    handler: Any, body: dict[str, Any], message: dict[str, Any], usage: dict[str, int]
) -> None:
    """Answer a chat-completion request with ``message``: one JSON completion, or, when the
    request streams, the same reply as server-sent chunks (content or tool calls, then a
    usage chunk when ``stream_options.include_usage`` asks for it, then ``[DONE]``)."""
    import json

    finish = "tool_calls" if message.get("tool_calls") else "stop"
    head = {"id": "cmpl-1", "created": 0, "model": body.get("model", "test-model")}
    if not body.get("stream"):
        send_json(
            handler,
            {
                **head,
                "object": "chat.completion",
                "usage": usage,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            },
        )
        return
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
    chunks = [
        {"index": 0, "delta": delta, "finish_reason": None},
        {"index": 0, "delta": {}, "finish_reason": finish},
    ]
    events = [{**head, "object": "chat.completion.chunk", "choices": [c]} for c in chunks]
    if (body.get("stream_options") or {}).get("include_usage"):
        events.append({**head, "object": "chat.completion.chunk", "choices": [], "usage": usage})
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.end_headers()
    for event in events:
        handler.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
    handler.wfile.write(b"data: [DONE]\n\n")
    handler.close_connection = True


@contextmanager
def pilot_over_own_store(
    settings: Any, example_kb: Any, path: Any, *keys: Any, roles: str = "model", llm: Any = None
) -> Iterator[tuple[Any, Any]]:
    """A pilot app (and its runtime) over its own embedded store at ``path``: the example KB
    ingested, memory and sessions beside it, the answering test double (or ``llm``) in the
    roles (``roles="evidence"``: no role on the model path, the product's default)."""
    from service.app import create_app
    from storage.kb.ingest import ingest_paths
    from storage.kb.knowledge_base import KnowledgeBase
    from storage.qdrant.edge_store import EdgeStore
    from tests.conftest import EXAMPLE_KB

    configured = with_api_keys(settings, *keys)
    store = EdgeStore(path)
    kb = KnowledgeBase(configured, store, example_kb.encoders)
    ingest_paths(kb, [EXAMPLE_KB])
    runtime = scripted_runtime(configured, kb, llm or answering_llm(), memory_store=store, roles=roles)
    runtime.memory.ensure()
    try:
        yield create_app(configured, path.parent, runtime), runtime
    finally:
        store.close()


@contextmanager
def shipped_pilot_client(settings: Any, example_kb: Any, path: Any, *keys: Any) -> Iterator[Any]:
    """A ``TestClient`` on a pilot over its own embedded store at ``path`` (the example KB
    ingested), every role on the evidence path as shipped, accepting ``keys``."""
    from fastapi.testclient import TestClient

    with (
        pilot_over_own_store(settings, example_kb, path, *keys, roles="evidence") as (app, _),
        TestClient(app) as client,
    ):
        yield client


def acme_team() -> list[Any]:
    """The keys of one tenant's support team: a trusted backend (public slots, basic tier),
    an agent ``ana`` and an admin ``lead``; each key's secret is ``<name>-key``."""
    from config.settings import ApiKey
    from service.auth import hash_key

    backend = ApiKey(
        name="backend",
        sha256=hash_key("backend-key"),
        tenant="acme",
        slots={"access_level": "public", "tier": "basic"},
        trust_customer_id=True,
    )
    return [
        backend,
        ApiKey(name="ana", sha256=hash_key("ana-key"), tenant="acme", role="agent"),
        ApiKey(name="lead", sha256=hash_key("lead-key"), tenant="acme", role="admin"),
    ]


def widget_key(name: str, key: str, origins: list[str], identity_env: str | None = None) -> Any:
    """A publishable widget key of tenant ``acme`` for public pages on ``origins``."""
    from config.settings import ApiKey
    from service.auth import hash_key

    return ApiKey(
        name=name,
        sha256=hash_key(key),
        tenant="acme",
        role="widget",
        slots={"access_level": "public"},
        origins=origins,
        identity_secret_env=identity_env,
    )


def bearer(name: str) -> dict[str, str]:
    """The Authorization header of the test key ``name`` (its secret: ``<name>-key``)."""
    return {"Authorization": f"Bearer {name}-key"}


def api_key(name: str, tenant: str = "acme", role: str = "customer", **slots: str) -> Any:
    """A test key ``name`` (its secret: ``<name>-key``) of ``tenant`` with enforced ``slots``;
    a customer key is a trusted backend (it names customers)."""
    from config.settings import ApiKey
    from service.auth import hash_key

    return ApiKey(
        name=name,
        sha256=hash_key(f"{name}-key"),
        tenant=tenant,
        role=role,
        slots=slots,
        trust_customer_id=role == "customer",
    )


def examples_over_a_fixture(count: int) -> Any:
    """Hypothesis settings for a test that shares a function-scoped fixture (a running
    pilot) across ``count`` examples, the same ones every run."""
    from hypothesis import HealthCheck, settings

    return settings(
        max_examples=count,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )


def fields_at_fault(answer: Any) -> list[str]:
    """The fields an error answer names: ``error.details[].field``, the one spelling (a
    refusal of a route and a validation error alike; ``error.field`` is never written)."""
    error = answer.json()["error"]
    assert "field" not in error, error
    return [d["field"] for d in error.get("details") or []]
