"""The support check of drafted answers: fluent paraphrases kept, denials and moved facts not."""

from __future__ import annotations

import frontmatter
import pytest

from storage.kb.embeddings import load_encoders
from tasks.evidence import EvidenceScorer, verified
from tests.conftest import REPO


@pytest.fixture(scope="module")
def scorer(settings):
    return EvidenceScorer(load_encoders(settings), settings.evidence)


def page(path: str) -> list[str]:
    return [frontmatter.load(REPO / "examples" / "kb" / path).content]


def test_a_paraphrase_that_keeps_the_pages_words_is_kept(scorer):
    # MaxSim 0.796: below the 0.8 a sentence in other words needs, but 5 of its 6 words stand
    support = scorer.support(
        "We'll email you a download link that stays valid for 7 days.", page("data/export.md")
    )
    assert support[0].semantic < 0.8 and verified(support)


def test_a_claim_the_page_denies_is_not_kept(scorer):
    passages = page("accounts/team-members.md")
    assert verified(
        scorer.support(
            "Guests see only the folders shared with them and do not count as paid users.", passages
        )
    )
    assert not verified(
        scorer.support("Guests count as paid users and can see every folder in the workspace.", passages)
    )


def test_a_number_from_another_sentence_of_the_page_is_not_the_claims(scorer):
    passages = [
        "Exports of up to 50 GB are ready within an hour. Larger exports can take up "
        "to 24 hours. We email a download link that is valid for 7 days."
    ]
    assert verified(scorer.support("Exports of up to 50 GB are ready within an hour.", passages))
    assert not verified(scorer.support("Exports of up to 50 GB are ready within 7 hours.", passages))


def test_a_claim_made_of_courtesy_and_a_denial_of_the_pages_word_is_not_kept(scorer):
    passages = page("billing/refunds.md")
    assert not verified(
        scorer.support(
            "Of course! When you downgrade in the middle of a billing period, CloudDesk refunds "
            "the difference.",
            passages,
        )
    )
