"""Rasa adapter and user-supplied retriever classes."""

from __future__ import annotations

import importlib
import sys
import types
from dataclasses import dataclass

import pytest

from config.settings import ConfigError
from integrations.retriever_loader import load_retriever, retriever_class

pytestmark = pytest.mark.integration


class NotARetriever:
    pass


class SyncSearch:
    def connect(self, config):
        pass

    def search(self, query, tracker_state, threshold=0.0):
        return []


class EchoRetriever:
    """A user's own retriever, as Rasa's interface describes it."""

    def __init__(self, embeddings=None):
        self.connected_with = None

    def connect(self, config):
        self.connected_with = config

    async def search(self, query, tracker_state, threshold=0.0):
        return [query]


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


def test_a_users_retriever_is_constructed_and_connected(settings, tmp_path):
    custom = settings.model_copy(update={"vector_store": settings.vector_store.model_copy(
        update={"type": "tests.integration.test_adapters.EchoRetriever"})})
    retriever = load_retriever(custom, tmp_path)
    assert isinstance(retriever, EchoRetriever)
    assert retriever.connected_with.type.endswith("EchoRetriever")


def _fake_rasa(monkeypatch) -> types.ModuleType:
    """A test double of rasa.core.information_retrieval with Rasa's own shapes."""

    @dataclass
    class SearchResult:
        text: str
        metadata: dict
        score: float | None = None

    @dataclass
    class SearchResultList:
        results: list
        metadata: dict

    class InformationRetrievalException(Exception):
        pass

    class InformationRetrieval:
        def __init__(self, embeddings):
            self.embeddings = embeddings

    module = types.ModuleType("rasa.core.information_retrieval")
    module.SearchResult, module.SearchResultList = SearchResult, SearchResultList
    module.InformationRetrieval = InformationRetrieval
    module.InformationRetrievalException = InformationRetrievalException
    for name in ("rasa", "rasa.core"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "rasa.core.information_retrieval", module)
    return module


async def test_rasa_adapter_returns_rasa_types_and_honours_slots(monkeypatch, kb_dir, example_kb):
    fake = _fake_rasa(monkeypatch)
    import integrations.rasa_adapter as adapter

    adapter = importlib.reload(adapter)
    try:
        assert adapter.RASA_AVAILABLE
        retriever = adapter.SupportcrewRasaRetriever(embeddings=None)
        assert isinstance(retriever, fake.InformationRetrieval)
        monkeypatch.setitem(adapter._SHARED, (None, str(kb_dir)),
                            adapter.QdrantRetriever(kb=example_kb))
        endpoint = types.SimpleNamespace(kwargs={"data_dir": str(kb_dir)})
        retriever.connect(endpoint)
        retriever.connect(endpoint)  # Rasa calls connect on every prediction
        tracker = {"sender_id": "c-1", "slots": {"tier": "basic", "access_level": "customer"}}
        found = await retriever.search(query="How long does a refund take?",
                                       tracker_state=tracker, threshold=0.0)
        assert isinstance(found, fake.SearchResultList)
        assert isinstance(found.results[0], fake.SearchResult)
        assert found.results[0].metadata["source_id"] == "billing/refunds.md"
        assert "5 to 7 business days" in found.results[0].metadata["answer"]
        sso = await retriever.search(query="SAML single sign-on setup", tracker_state=tracker)
        assert not any(r.metadata["source_id"].startswith("sso/") for r in sso.results)
        with pytest.raises(fake.InformationRetrievalException):
            await retriever.search(query="   ", tracker_state=tracker)
    finally:
        monkeypatch.undo()
        importlib.reload(adapter)


def test_rasa_adapter_without_rasa_uses_our_types():
    import integrations.rasa_adapter as adapter

    assert not adapter.RASA_AVAILABLE
    from storage.retrieval.retriever import SearchResultList

    assert adapter._List is SearchResultList
