"""A draft that changes a name, code, path, URL or number is not supported."""

import pytest

from tasks.facts import (
    asked_codes,
    codes,
    explained_codes,
    facts,
    missing_facts,
    negated,
    undocumented_codes,
)

PASSAGE = (
    "CloudDesk works with Okta, Microsoft Entra ID, Google Workspace and any SAML 2.0 "
    "identity provider. In **Settings → Security → Single sign-on**, copy the ACS URL. "
    "See https://status.clouddesk.example for incidents. Error SSO-104 means the user "
    "is not assigned."
)


@pytest.mark.parametrize(
    "sentence",
    [
        "CloudDesk works with Okta and Microsoft Entra ID.",
        "Open Settings > Security > Single sign-on and copy the ACS URL.",
        "Check https://status.clouddesk.example for incidents.",
        "Error SSO-104 means the user is not assigned.",
        "It works with any SAML 2.0 identity provider.",
    ],
)
def test_sentences_that_keep_the_facts_pass(sentence):
    assert missing_facts(sentence, PASSAGE) == []


@pytest.mark.parametrize(
    ("sentence", "changed"),
    [
        ("CloudDesk works with Okta and PingFederate.", "PingFederate"),
        ("Open Settings > Admin > Single sign-on.", "Settings > Admin > Single"),
        ("Check https://status.example.com for incidents.", "https://status.example.com"),
        ("Error SSO-105 means the user is not assigned.", "SSO-105"),
        ("It works with any SAML 3.0 identity provider.", "3.0"),
    ],
)
def test_a_changed_fact_is_named(sentence, changed):
    assert changed in missing_facts(sentence, PASSAGE)


def test_sentence_initial_words_are_not_taken_for_names():
    assert facts("Refunds take 5 to 7 business days.") == {"5", "7"}


def test_codes_are_found_in_any_case():
    assert codes("my card failed with pay-101, then E-429") == {"PAY-101", "E-429"}


def test_a_number_must_stand_whole_in_the_passage():
    assert missing_facts("Mail form [15] today.", "See form [8]; records since 2015.") == ["15"]
    assert missing_facts("Mail form VS-118.", "Use form VS-1180.") == ["118", "VS-118"]
    assert missing_facts("Mail form VS-118.", "Use form VS-118 (PDF).") == []


def test_a_number_must_stand_beside_a_word_it_stands_beside_in_the_passage():
    page = "There were 4 Han Tumens and 10 Khitan Tumens. The link is valid for 60 minutes."
    assert missing_facts("There were 10 Han Tumens and 10 Khitan Tumens.", page) == ["10"]
    assert missing_facts("The reset link stays valid for 60 minutes.", page) == []
    assert missing_facts("60", "It takes 60 days.") == []  # a number alone: by itself
    castle = "the Royal Castle (1596–1626) and the Jesuit Church (1609–1626)"
    assert missing_facts(f"It names {castle}.", castle) == []
    assert missing_facts("the Royal Castle (1609–1626) and the Jesuit Church (1609–1626)", castle) == [
        "1609"
    ]


def test_a_made_up_name_at_a_sentences_start_is_a_name():
    vocabulary = {"of", "course", "we", "ll", "email", "you", "refund", "post", "traumatic"}.__contains__
    page = "Service covers members. We email you. Refunds take 5 days. Post-traumatic stress."
    assert missing_facts("Of course. Zorblax covers members.", page, vocabulary) == ["Zorblax"]
    assert missing_facts("Of course. Zorblax covers members.", page) == []  # no vocabulary
    for sentence in ("We'll email you.", "Refunds take 5 days.", "Post-traumatic stress."):
        assert missing_facts(sentence, page, vocabulary) == [], sentence


def test_a_number_inside_a_token_is_part_of_the_token():
    page = "Each request carries an `HMAC-SHA256` of the body; files up to mp3 quality."
    assert missing_facts("It carries an HMAC-SHA256 of the body.", page) == []
    assert missing_facts("It carries an HMAC-SHA512 of the body.", page) == ["HMAC-SHA512", "SHA512"]
    assert missing_facts("Files up to mp4 quality.", page) == ["mp4"]


@pytest.mark.parametrize(
    ("sentence", "denies"),
    [
        ("Guests do not count as paid users.", True),
        ("You can't reset it here.", True),
        ("It is never refunded.", True),
        ("If the reactions don t go away", True),
        ("No refund is paid.", True),
        ("Guests count as paid users.", False),
        ("Notice the note on knots.", False),
        ("You can take it.", False),
    ],
)
def test_a_sentence_that_says_something_is_not_so(sentence, denies):
    assert negated(sentence) is denies


def test_a_capitalised_word_after_a_spaced_dash_is_a_name():
    assert missing_facts(
        "Service - Zorblax Life Insurance covers members.",
        "Service - Disabled Veterans Life Insurance covers members.",
    ) == ["Zorblax"]
    assert missing_facts("- Contact us by mail.", "You can write to us.") == []  # a bullet


def test_a_machine_name_ending_in_a_number_is_not_a_code():
    assert codes("The sync on build-server-7 got E-429.") == {"E-429"}


@pytest.mark.parametrize(
    ("message", "asked"),
    [
        ("My payment failed with PAY-102.", {"PAY-102"}),
        ("srv-7 failed with error E-429.", {"E-429"}),
        ("How do I reset my password?", set()),
    ],
)
def test_the_code_a_message_asks_about(message, asked):
    assert asked_codes(message) == asked


def test_a_code_of_a_documented_family_missing_from_the_page_is_undocumented():
    pages = ["PAY-101: the card was declined.", "PAY-102: the card expired."]
    assert undocumented_codes("It failed with PAY-407.", pages[0], pages) == {"PAY-407"}
    assert undocumented_codes("It failed with PAY-102.", pages[1], pages) == set()
    # a customer's own reference belongs to no documented family
    assert undocumented_codes("Refund for ORD-55812?", pages[0], pages) == set()


def test_a_code_is_explained_only_by_a_page_that_holds_it():
    page = "E-429 means too many requests."
    assert explained_codes("What does error E-429 mean?", page, [page]) == {"E-429"}
    assert explained_codes("What does error E-430 mean?", page, [page]) == set()
    assert explained_codes("Refund for ORD-55812?", page, [page]) == set()  # no documented family


def test_only_error_codes_of_an_unnamed_family_make_a_page_foreign():
    from tasks.facts import foreign_error_codes

    refunds = "Refunds\nRefunds take 5 to 7 business days."
    assert foreign_error_codes("Error on my refund for order ORD-55812?", refunds) == set()
    assert foreign_error_codes("Our sync fails with error code E-429.", refunds) == {"E-429"}
    assert foreign_error_codes("Our sync fails with error code E-429.", "E-500 and E-503") == set()
