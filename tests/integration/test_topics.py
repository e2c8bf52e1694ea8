"""A conversation's topic: the page nearest its question, or none when no page is near enough
(``service.domain.topics.TOPIC_FLOOR``)."""

from __future__ import annotations

import pytest

from service.domain.topics import nearest_page, topic_namer
from storage.retrieval.retriever import QdrantRetriever

pytestmark = pytest.mark.integration
SLOTS = {"access_level": "customer"}


def test_a_question_far_from_every_page_is_about_none(example_kb):
    retriever = QdrantRetriever(kb=example_kb)
    name = topic_namer(retriever, example_kb.encoders.dense.encode, "acme")
    far = "Do you ship to Antarctica?"
    # a page is still the nearest (the gap report names it), but nothing about it is near
    assert nearest_page(retriever, {**SLOTS, "tenant": "acme"})(far) is not None
    assert name(far, SLOTS) == ""
    assert name("Can I earn a commission for referring customers?", SLOTS) == ""
    assert name("How do I export our workspace data?", SLOTS) == "data/export.md"
    assert name("How long does a refund take?", SLOTS) == "billing/refunds.md"


def test_a_page_near_in_words_that_does_not_answer_is_no_topic(settings, example_kb):
    """ "Where do I upload my student card?" reads near Payment methods (cards), which the
    answerability model reads as no answer to it: no topic, not a wrong one."""
    from tasks.evidence import EvidenceScorer

    retriever = QdrantRetriever(kb=example_kb)
    scorer = EvidenceScorer(example_kb.encoders, settings.evidence, example_kb.term_statistics)
    encode = example_kb.encoders.dense.encode
    words_only = topic_namer(retriever, encode, "acme")
    name = topic_namer(retriever, encode, "acme", answerable=scorer.answerable)
    card = "Where do I upload my student card?"
    assert words_only(card, SLOTS) == "billing/payment-methods.md"  # the cosine floor alone
    assert name(card, SLOTS) == ""
    assert name("My refund has not arrived after two weeks.", SLOTS) == "billing/refunds.md"
    assert name("How do I export our workspace data?", SLOTS) == "data/export.md"
