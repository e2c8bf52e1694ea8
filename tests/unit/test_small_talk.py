"""training/small_talk.py: a word is small talk when the passage answering the turn does not hold
it; the estimate needs several turns before it calls a word small talk."""

from __future__ import annotations

from storage.kb.chunking import chunk_text
from training.small_talk import Observation, Page, held_stems, scores, small_talk


def test_a_word_is_small_talk_only_when_passages_more_often_did_not_hold_it():
    counts = {"hello": [40, 0], "refund": [30, 28], "wife": [1, 0], "sure": [10, 5]}
    assert small_talk(counts, mean=0.8, strength=2.0) == {"hello"}


def test_only_the_passage_holding_the_evidence_counts_as_held():
    text = "# Refunds\n\nRefunds take five days.\n\n# Invoices\n\nInvoices are sent\nmonthly by email."
    page = Page(text, tuple(chunk_text(text, 400, 1)))
    held = held_stems({"billing": page}, ["billing"], ["Invoices are sent monthly by email."])
    assert {"invoic", "email"} <= held and "refund" not in held
    assert held_stems({"billing": page}, ["other"], ["Invoices are sent monthly"]) == set()
    assert held_stems({"billing": page}, ["billing"], ["not on the page"]) == set()


def test_calling_small_talk_is_scored_against_what_the_passage_did_not_hold():
    said = [Observation("hello", False, "customer", 0), Observation("refund", True, "customer", 0)]
    assert scores([True, True], said) == {"precision": 0.5, "recall": 1.0, "f1": 0.667, "words": 2}
    assert scores([False, False], said)["recall"] == 0.0
