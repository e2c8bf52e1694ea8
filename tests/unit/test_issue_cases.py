"""A message quoted in an issue is a regression test of the product, never a fitting row
(examples/regression/issue_cases.yaml): the decision's fitting asks and the message-kind
classifier's written examples hold none of them."""

from __future__ import annotations

import json

import pytest

from training.decision_readings import ISSUE_CASES, fitting_asks, issue_cases, normalised
from training.dialogue_pack import PACK
from training.message_kind import WRITTEN


def test_the_cases_file_reads_and_names_real_messages():
    cases = issue_cases()
    assert len(cases) >= 50
    assert normalised("Can I pay by bank transfer instead of a card?") in cases
    assert all(case for case in cases)
    assert ISSUE_CASES.is_file()


def test_no_written_fitting_ask_is_an_issue_case():
    quoted = issue_cases()
    asks = fitting_asks(pack=False)
    assert len(asks) > 100  # the written answer sets and their twins
    assert not [a.message for a in asks if normalised(a.message) in quoted]


@pytest.mark.skipif(not PACK.is_dir(), reason="the doc2dial training pack is not on this machine")
def test_no_pack_fitting_ask_is_an_issue_case():
    quoted = issue_cases()
    asks = [a for a in fitting_asks() if a.set == "pack"]
    assert len(asks) > 2000
    assert not [a.message for a in asks if normalised(a.message) in quoted]


def test_the_message_kind_examples_hold_no_issue_case():
    quoted = issue_cases()
    rows = [json.loads(line) for line in WRITTEN.read_text(encoding="utf-8").splitlines() if line]
    assert not [r["text"] for r in rows if normalised(r["text"]) in quoted]
