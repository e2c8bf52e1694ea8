"""Typos are read as the pages spell the word; real words, names and codes are left alone."""

from __future__ import annotations

import pytest

from tasks.spelling import respell

PAGES = [
    "Once a refund is approved, the money is returned within 5 to 7 business days.",
    "Passwords need at least 12 characters. Import files from Dropbox in Settings.",
]


def nothing_known(word: str) -> bool:
    return False


@pytest.mark.parametrize(
    ("question", "read_as"),
    [
        ("how long does a refnd take", "how long does a refund take"),  # one slip
        ("how many charactres do I need", "how many characters do I need"),  # transposed
        ("Passwrods: how long?", "Passwords: how long?"),  # opens the message
        ("is the mony returned", "is the mony returned"),  # under five letters
        ("how do I import from Dropbx?", "how do I import from Dropbx?"),  # a name: kept
        ("does REFND-12 work", "does REFND-12 work"),  # a code: kept
        ("how long does a xefund take", "how long does a xefund take"),  # first letter differs
        ("are the busness days counted", "are the business days counted"),  # long word
        ("what aproovd refund", "what aproovd refund"),  # three slips
    ],
)
def test_a_word_no_page_knows_is_read_as_the_nearest_page_word(question, read_as):
    assert respell(question, PAGES, nothing_known) == read_as


def test_a_known_word_is_never_changed_even_one_slip_from_a_page_word():
    assert (
        respell(
            "what happens at the event", ["It is not even approved."], known=lambda word: word == "event"
        )
        == "what happens at the event"
    )
    assert (
        respell("how long does a refnd take", PAGES, known=lambda word: True)
        == "how long does a refnd take"
    )


def test_the_most_frequent_page_word_wins_a_tie():
    pages = ["Plans and plans and plans.", "One plane."]
    assert respell("which planz", pages, nothing_known) == "which plans"
