"""Rasa adapter and user-supplied retriever classes."""

from __future__ import annotations

import types
from typing import ClassVar

import pytest

from config.settings import ConfigError
from integrations.retriever_loader import load_retriever, retriever_class
from storage.retrieval.request import RetrievalRequest

pytestmark = pytest.mark.integration


class NotARetriever:
    pass


class SyncSearch:
    def connect(self, config):
        pass

    def search(self, query, tracker_state, threshold=0.0):
        return []


class HelpDeskRetriever:
    """A user's own retriever, as Rasa's interface describes it: it sees the turn's slots."""

    seen_slots: ClassVar[list[dict]] = []

    def __init__(self, embeddings=None):
        self.connected_with = None

    def connect(self, config):
        self.connected_with = config

    async def search(self, query, tracker_state, threshold=0.0):
        from storage.retrieval.results import SearchResult, SearchResultList

        HelpDeskRetriever.seen_slots.append(dict(tracker_state["slots"]))
        text = (
            "Parcels ship within 2 business days. You get a tracking link by email once a parcel ships."
        )
        return SearchResultList(
            [
                SearchResult(
                    text=text,
                    score=0.9,
                    metadata={"source_id": "helpdesk/shipping", "title": "Shipping", "url": None},
                )
            ]
        )


@pytest.mark.parametrize(
    ("type_name", "message"),
    [
        ("nodots", "neither 'qdrant' nor"),
        ("no_such_module_xyz.Store", "cannot import module"),
        ("tests.integration.test_adapters.Missing", "has no class 'Missing'"),
        ("tests.integration.test_adapters.NotARetriever", "does not implement connect, search"),
        ("tests.integration.test_adapters.SyncSearch", "must be `async def`"),
    ],
)
def test_bad_retriever_classes_are_named(type_name, message):
    with pytest.raises(ConfigError, match=message):
        retriever_class(type_name)


USER_CLASS = "tests.integration.test_adapters.HelpDeskRetriever"


def with_user_retriever(settings):
    return settings.model_copy(
        update={"vector_store": settings.vector_store.model_copy(update={"type": USER_CLASS})}
    )


def test_a_users_retriever_is_connected_and_searched_with_the_slots(settings, tmp_path):
    retriever = load_retriever(with_user_retriever(settings), tmp_path)
    assert isinstance(retriever.inner, HelpDeskRetriever)
    assert retriever.inner.connected_with.type == USER_CLASS
    found = retriever.search_queries(
        RetrievalRequest(
            ["when does my parcel ship?", "shipping time"],
            {"tier": "pro"},
            advisory={"product": "cloud"},
        )
    )
    assert [r.metadata["source_id"] for r in found.results] == ["helpdesk/shipping"]
    assert HelpDeskRetriever.seen_slots[-1] == {"tier": "pro", "product": "cloud"}


@pytest.mark.parametrize("engine", ["crewai", "autogen"])
def test_the_crew_answers_from_a_users_retriever(settings, tmp_path, engine):
    from agents.build import build_runtime
    from agents.turn import run_turn
    from tasks.schemas import TurnRequest

    runtime = build_runtime(with_user_retriever(settings), tmp_path, engine=engine)
    try:
        result = run_turn(
            TurnRequest(
                session_id="u", message="How long until my parcel ships?", slots={"tier": "pro"}
            ),
            runtime,
        )
    finally:
        runtime.close()
    assert result.verdict == "answered", result.trace.notes
    assert [c.source_id for c in result.citations] == ["helpdesk/shipping"]
    assert "2 business days" in result.answer


def test_cli_search_uses_the_configured_retriever(settings, tmp_path):
    from typer.testing import CliRunner

    from main import app

    config = tmp_path / "assistant.yaml"
    config.write_text(f"vector_store: {{type: {USER_CLASS}}}\n")
    result = CliRunner().invoke(
        app,
        ["--data-dir", str(tmp_path), "--config", str(config), "search", "parcel shipping", "--json"],
    )
    assert result.exit_code == 0, result.output
    assert "helpdesk/shipping" in result.output


async def test_rasa_adapter_searches_under_the_trackers_slots(monkeypatch, kb_dir, example_kb):
    """Without rasa installed, with our identical types (the real rasa-pro is checked by
    ``.ci/rasa``: tests/rasa/check_rasa_pro.py)."""
    import integrations.rasa_adapter as adapter

    retriever = adapter.SupportcrewRasaRetriever(embeddings=None)
    monkeypatch.setitem(adapter._SHARED, (None, str(kb_dir)), adapter.QdrantRetriever(kb=example_kb))
    endpoint = types.SimpleNamespace(kwargs={"data_dir": str(kb_dir)})
    retriever.connect(endpoint)
    retriever.connect(endpoint)  # Rasa calls connect on every prediction
    tracker = {"sender_id": "c-1", "slots": {"tier": "basic", "access_level": "customer"}}
    found = await retriever.search(
        query="How long does a refund take?", tracker_state=tracker, threshold=0.0
    )
    assert found.results[0].metadata["source_id"] == "billing/refunds.md"
    assert "5 to 7 business days" in found.results[0].metadata["answer"]
    sso = await retriever.search(query="SAML single sign-on setup", tracker_state=tracker)
    assert not any(r.metadata["source_id"].startswith("sso/") for r in sso.results)
    with pytest.raises(Exception, match="query"):
        await retriever.search(query="   ", tracker_state=tracker)


def test_rasa_adapter_without_rasa_uses_our_types():
    import integrations.rasa_adapter as adapter

    assert not adapter.RASA_AVAILABLE
    from storage.retrieval.results import SearchResultList

    assert adapter._List is SearchResultList
