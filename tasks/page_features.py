"""Features of one candidate page: does what the customer named stand on *this* page?

A page on the right programme that does not answer shares the programme's words with the
question, so the turn's passages as a whole "cover" it; what tells the two apart is whether
the subject the customer named (a programme, a tool, a fee, a code, a rare term, a phrase of
two of them) stands on the page itself, its title, or the sentences an answer would quote.
Each function here reads one page, never all the retrieved passages together:

    coverage      the phrasing's subject terms (BM25 terms, IDF-weighted) the page holds
    missing_rare  how rare the rarest subject term the page does not hold is (0..1)
    phrases       the share of the subject's two-word phrases ("dental insurance") that stand
                  on the page as they were asked (its content words adjacent)
    navigation    the share of a passage's units that only point elsewhere (a bare link, a
                  short menu line: storage/kb/assets/decision/rules.yaml)

Usage::

    weights = subject_weights(scorer, "Is there a fee for icons on my photo document?")
    terms = scorer.encoders.bm25.document_terms([page])[0]
    held(weights, terms, scorer.term_stats())        # (coverage, missing_rare): (0.61, 0.83)
    phrase_share("VA dental insurance program", page)    # 0.67
    navigation(split_units(passage))                     # 0.0
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

from storage.kb.knowledge_base import TermStats
from storage.kb.model_files import stopwords
from storage.text import TERM
from tasks.courtesy import subject, subject_words
from tasks.evidence import EvidenceScorer
from tasks.passage_text import Unit
from tasks.rules import RULES

_STOP = stopwords()


def question_terms(question: str) -> str:
    """The question without the quantity word of "how much / many / long / often ..." and the
    "mean" of "what does X mean": they ask *for* an amount or an explanation and are not words
    the answer contains ("Pro costs $15", "PAY-101: the card was declined").

    >>> question_terms("How much does the Pro plan cost?")
    'How does the Pro plan cost?'
    >>> question_terms("What does error E-429 mean?")
    'What does error E-429?'
    """
    return RULES.what_means.sub(r"\1", RULES.how_quantity.sub(r"\1", question))


def subject_weights(scorer: EvidenceScorer, question: str) -> dict[int, float]:
    """IDF weights of the question's subject terms (small talk and "how much" left out)."""
    stats = scorer.term_stats()
    indices = scorer.encoders.bm25.encode_query(subject_words(question_terms(question))).indices
    return {t: stats.idf(t) for t in set(indices)}


def coverage(weights: Mapping[int, float], terms: frozenset[int]) -> float:
    """The weighted share of the terms in ``weights`` that ``terms`` holds.

    >>> round(coverage({1: 2.0, 2: 1.0}, frozenset({1})), 4)
    0.6667
    """
    total = sum(weights.values())
    return sum(w for t, w in weights.items() if t in terms) / total if total else 0.0


def held(weights: Mapping[int, float], terms: frozenset[int], stats: TermStats) -> tuple[float, float]:
    """(coverage, missing_rare) of the subject terms by one page's terms: how much of the
    subject it holds, and how rare the rarest term it lacks is (its IDF over the highest a
    term can have; 0 when it lacks none)."""
    rarest = stats.idf(-1) or 1.0
    missing = [w for t, w in weights.items() if t not in terms]
    return round(coverage(weights, terms), 4), round(max(missing, default=0.0) / rarest, 4)


def _content(text: str) -> list[str]:
    return [w for w in TERM.findall(text.lower()) if w not in _STOP and w not in RULES.small_talk]


def phrases(question: str) -> list[tuple[str, str]]:
    """The subject's two-word phrases: adjacent content words of its sentences, small talk
    and stopwords left out.

    >>> phrases("I would like to learn about the VA Dental Insurance Program.")
    [('va', 'dental'), ('dental', 'insurance'), ('insurance', 'program')]
    """
    words = _content(subject(question_terms(question)))
    return list(dict.fromkeys(itertools.pairwise(words)))


def phrase_share(question: str, page: str) -> float:
    """The share of the question's two-word phrases that stand on ``page`` as adjacent
    content words (1.0 for a question with none: nothing to miss).

    >>> phrase_share("Tell me about dental insurance", "VA dental insurance (VADIP) is ...")
    1.0
    >>> phrase_share("Is there a fee for photo icons?", "Photo documents show icons.")
    0.0
    """
    asked = phrases(question)
    if not asked:
        return 1.0
    words = _content(page)
    there = set(itertools.pairwise(words))
    return round(sum(p in there for p in asked) / len(asked), 4)


def navigation(units: Sequence[Unit]) -> float:
    """The share of ``units`` that only point elsewhere: a bare link or web address, or a
    short line without a sentence end (a menu entry).

    >>> from tasks.passage_text import split_units
    >>> navigation(split_units("Apply online\\nwww.va.gov/apply\\nCheck status"))
    1.0
    >>> navigation(split_units("You can apply online. It takes 10 minutes."))
    0.0
    """
    if not units:
        return 0.0
    pointing = sum(
        bool(RULES.navigation_link.match(u.text))
        or (
            u.kind in ("heading", "item")
            and len(u.text.split()) <= RULES.navigation_words
            and u.text[-1:] not in ".!?:"
        )
        for u in units
    )
    return round(pointing / len(units), 4)
