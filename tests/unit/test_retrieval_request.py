"""A retriever's request: defaults that leave every option to the settings, and a record that
cannot change after it is made (the slots it carries are the ones the filters are built from)."""

from __future__ import annotations

import dataclasses

import pytest

from config.settings import load_settings
from storage.retrieval.filters import build_filters
from storage.retrieval.request import RetrievalRequest


def test_a_request_names_only_what_it_changes():
    request = RetrievalRequest(["refund time"])
    assert request.queries == ("refund time",)
    assert dict(request.slots) == {} and dict(request.advisory) == {}
    assert (request.threshold, request.top_k, request.pipeline) == (None, None, None)
    assert request.strict and request.entities == () and request.pages == ()


def test_options_are_keyword_only():
    with pytest.raises(TypeError):
        RetrievalRequest(["refund"], {}, {"product": "cloud"})  # type: ignore[misc]


def test_a_request_cannot_change_after_it_is_made():
    slots = {"tier": "basic"}
    request = RetrievalRequest(["refund"], slots, pages=["billing/refunds.md"])
    slots["tier"] = "enterprise"  # the caller's dict, edited afterwards
    assert request.slots["tier"] == "basic"
    with pytest.raises(TypeError):
        request.slots["tier"] = "enterprise"  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.slots = {"tier": "enterprise"}  # type: ignore[misc]
    assert isinstance(request.pages, tuple)


def test_one_text_is_not_taken_for_a_list_of_characters():
    with pytest.raises(TypeError, match="sequence of texts"):
        RetrievalRequest("refund")


def test_replace_keeps_the_slots_and_their_enforced_filters():
    rules = load_settings().slots
    request = RetrievalRequest(["sso"], {"tier": "basic", "access_level": "customer"})
    deeper = dataclasses.replace(request, top_k=40, pages=["sso/saml.md"])
    assert deeper.slots == request.slots and deeper.top_k == 40
    assert build_filters(rules, deeper.slots).enforced == build_filters(rules, request.slots).enforced
