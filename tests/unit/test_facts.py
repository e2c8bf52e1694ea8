"""A draft that changes a name, code, path, URL or number is not supported."""

import pytest

from tasks.facts import (
    asked_codes,
    codes,
    explained_codes,
    facts,
    missing_facts,
    undocumented_codes,
)

PASSAGE = ("CloudDesk works with Okta, Microsoft Entra ID, Google Workspace and any SAML 2.0 "
           "identity provider. In **Settings → Security → Single sign-on**, copy the ACS URL. "
           "See https://status.clouddesk.example for incidents. Error SSO-104 means the user "
           "is not assigned.")


@pytest.mark.parametrize("sentence", [
    "CloudDesk works with Okta and Microsoft Entra ID.",
    "Open Settings > Security > Single sign-on and copy the ACS URL.",
    "Check https://status.clouddesk.example for incidents.",
    "Error SSO-104 means the user is not assigned.",
    "It works with any SAML 2.0 identity provider.",
])
def test_sentences_that_keep_the_facts_pass(sentence):
    assert missing_facts(sentence, PASSAGE) == []


@pytest.mark.parametrize(("sentence", "changed"), [
    ("CloudDesk works with Okta and PingFederate.", "PingFederate"),
    ("Open Settings > Admin > Single sign-on.", "Settings > Admin > Single"),
    ("Check https://status.example.com for incidents.", "https://status.example.com"),
    ("Error SSO-105 means the user is not assigned.", "SSO-105"),
    ("It works with any SAML 3.0 identity provider.", "3.0"),
])
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


def test_a_capitalised_word_after_a_spaced_dash_is_a_name():
    assert missing_facts("Service - Zorblax Life Insurance covers members.",
                         "Service - Disabled Veterans Life Insurance covers members.") == [
        "Zorblax"]
    assert missing_facts("- Contact us by mail.", "You can write to us.") == []  # a bullet


def test_a_machine_name_ending_in_a_number_is_not_a_code():
    assert codes("The sync on build-server-7 got E-429.") == {"E-429"}


@pytest.mark.parametrize(("message", "asked"), [
    ("My payment failed with PAY-102.", {"PAY-102"}),
    ("srv-7 failed with error E-429.", {"E-429"}),
    ("How do I reset my password?", set()),
])
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
    assert explained_codes("What does error E-429 mean?", page) == {"E-429"}
    assert explained_codes("What does error E-430 mean?", page) == set()
    assert explained_codes("Can I print E-429 on a form?", page) == set()  # not its meaning
