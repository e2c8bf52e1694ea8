"""The custom_service retriever against a minimal independent server and against our pilot."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from integrations.custom_service import CustomServiceError, CustomServiceRetriever
from storage.retrieval.request import RetrievalRequest
from tests.helpers import free_port, running_server, scripted_runtime, send_json, with_api_keys

pytestmark = pytest.mark.integration


class MinimalSearch(BaseHTTPRequestHandler):
    """An independent search service speaking the watsonx custom-service schema."""

    seen: ClassVar[list[dict]] = []
    mode = "ok"

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        MinimalSearch.seen.append({"body": body, "auth": self.headers.get("Authorization")})
        if MinimalSearch.mode == "error":
            self.send_response(500)
            self.end_headers()
            return
        payload = {
            "search_results": [
                {
                    "title": "Refunds",
                    "body": "Refunds take 5 to 7 business days.",
                    "url": "https://kb.example/refunds",
                    "highlight": {"body": ["5 to 7"]},
                    "result_metadata": {"score": 0.9},
                },
                {
                    "title": "Plans",
                    "body": "Pro costs $15.",
                    "url": "https://kb.example/plans",
                    "highlight": {"body": []},
                    "result_metadata": {"score": 0.4},
                },
            ]
        }
        if MinimalSearch.mode == "wrong-schema":
            payload = {"hits": []}
        send_json(self, payload)

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def minimal_server():
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), MinimalSearch)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    MinimalSearch.seen, MinimalSearch.mode = [], "ok"
    yield f"http://127.0.0.1:{server.server_address[1]}/search"
    server.shutdown()


async def test_results_map_from_an_independent_service(minimal_server, monkeypatch):
    monkeypatch.setenv("SEARCH_KEY", "s3cret")
    retriever = CustomServiceRetriever()
    retriever.connect({"url": minimal_server, "api_key_env": "SEARCH_KEY"})
    found = await retriever.search("refund time", {"slots": {"tier": "basic", "product": "cloud"}})
    assert [r.metadata["title"] for r in found.results] == ["Refunds", "Plans"]
    assert found.results[0].metadata["url"] == "https://kb.example/refunds"
    request = MinimalSearch.seen[-1]
    assert request["auth"] == "Bearer s3cret"
    assert request["body"]["query"] == "refund time"
    assert request["body"]["metadata"]["enforced_slots"]["tier"] == "basic"


@pytest.mark.parametrize("mode", ["error", "wrong-schema"])
def test_service_failures_are_clear(minimal_server, mode):
    MinimalSearch.mode = mode
    retriever = CustomServiceRetriever()
    retriever.connect({"url": minimal_server})
    with pytest.raises(CustomServiceError):
        retriever.search_queries(RetrievalRequest(["refund"]))


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"url": "ftp://x"}, "http"),
        ({}, "http"),
        ({"url": "http://127.0.0.1:9/s", "api_key_env": "UNSET_KEY_XYZ"}, "UNSET_KEY_XYZ"),
    ],
)
def test_bad_configuration_is_named(config, message):
    with pytest.raises(CustomServiceError, match=message):
        CustomServiceRetriever().connect(config)


def test_unreachable_service_is_an_error():
    retriever = CustomServiceRetriever(timeout=2)
    retriever.connect({"url": f"http://127.0.0.1:{free_port()}/search"})
    with pytest.raises(CustomServiceError, match="unreachable"):
        retriever.search_queries(RetrievalRequest(["refund"]))


def test_against_our_own_pilot_server(settings, example_kb, tmp_path, monkeypatch):
    from config.settings import ApiKey
    from service.app import create_app
    from service.auth import hash_key
    from tests.scripted_llm import ScriptedLLM

    configured = with_api_keys(
        settings,
        ApiKey(
            name="svc", sha256=hash_key("svc-key"), slots={"access_level": "customer", "tier": "basic"}
        ),
    )
    runtime = scripted_runtime(configured, example_kb, ScriptedLLM(model="s"))
    with running_server(create_app(configured, tmp_path, runtime)) as (url, _server):
        monkeypatch.setenv("PILOT_KEY", "svc-key")
        retriever = CustomServiceRetriever()
        retriever.connect({"url": f"{url}/v1/search", "api_key_env": "PILOT_KEY"})
        found = retriever.search_queries(RetrievalRequest(["How long does a refund take?"]))
        assert found.results[0].metadata["url"].endswith("/billing/refunds")
        sso = retriever.search_queries(
            RetrievalRequest(["SAML single sign-on setup"], advisory={"access_level": "internal"})
        )
        assert not any("/sso/" in (r.metadata["url"] or "") for r in sso.results)
