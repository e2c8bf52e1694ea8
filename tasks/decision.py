"""The answer decision: which page answers this message, in this conversation, whether it
does, and what to quote. One component:

    decide(scorer, settings, message, conversation, passages) -> Decision

in three stages, each a function of the one before:

    1. read    each phrasing of the message (``Conversation.phrasings``) against its
               candidate passages (the passages retrieval ranks closest and the page the
               conversation is about: ``tasks/page_choice.candidate_indices``): every
               candidate's window reading (``tasks/answerability.read``), the cross-encoder's
               probability for its best window, its title, relevance and codes, as the frozen
               records of ``tasks/decision_features.py`` (``read_phrasing``)
    2. settle  a pure function of those records and the fitted models: the page choice picks
               the candidate (storage/kb/assets/decision/page_choice.yaml), one logistic gate
               over its features gives one calibrated probability (gate.yaml), which nothing
               changes afterwards, and the operating points give the action: at or above
               ``answer_at`` answer, below ``refuse_below`` refuse, between them suggest
               (a judge model, where one is configured, weighs in); a phrasing the
               conversation's page answers wins (``settle``)
    3. quote   for an answer, the sentences of the chosen passage an extractive answer quotes
               (``tasks/answerability.quote``, from the window reading's focus; a quote model,
               ``tasks/quote_model.py``, reweighs the units only when quote.yaml ships, and
               none does: it lost to the window reading on the pack)

The :class:`~tasks.schemas.Decision` carries all three; the trace keeps it whole, and
``training/`` fits the page choice and the gate by settling the very readings the product
recorded (``settle`` with other models), so serving and training share one feature schema.

Usage::

    conversation = Conversation(phrasings=("How long does a refund take?",))
    decision = decide(scorer, settings, "How long does a refund take?", conversation, passages)
    decision.action, decision.source_id, decision.probability   # "answer", "billing/refunds.md", 0.97
    decision.quote                                              # ["Refunds to cards take ..."]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from config.settings import EvidenceSettings, Settings
from tasks.answerability import Focus, PassageReading, quote, read, refocus
from tasks.decision_features import (
    Candidate,
    CandidateFeatures,
    GateFeatures,
    PhrasingReading,
    UnitFeatures,
    check_model,
)
from tasks.evidence import EvidenceScorer
from tasks.facts import explained_codes, foreign_error_codes, undocumented_codes
from tasks.judging import as_the_pages_read
from tasks.operating_points import linear_terms, logistic_probability, operating_points
from tasks.page_choice import PageExtras, candidate_indices, choose, page_rows
from tasks.page_features import coverage, held, navigation, phrase_share, subject_weights
from tasks.quote_model import quote_focus
from tasks.rules import check_rules
from tasks.schemas import Decision, DecisionAction, Passage

_ACTION_RANK: dict[DecisionAction, int] = {"answer": 2, "suggest": 1, "refuse": 0, "handoff": 0}


@dataclass(frozen=True)
class Conversation:
    """What the decision knows of the conversation: the phrasings of the message to judge
    (the message, the questions it wraps, a follow-up's resolution: ``tasks/phrasings.py``)
    and the pages the conversation is about (what its last cited answer cited)."""

    phrasings: tuple[str, ...]
    subject: tuple[str, ...] = ()


def check_models(evidence: EvidenceSettings) -> None:
    """Refuse fitted models that weigh features the schema does not have, or that were
    fitted with another version of the rule set (at start)."""
    check_rules(evidence.answerability.rules, "gate (storage/kb/assets/decision/gate.yaml)")
    check_rules(evidence.page_choice.rules, "page choice (storage/kb/assets/decision/page_choice.yaml)")
    check_rules(evidence.quote.rules, "quote model (quote.yaml in storage/kb/assets/decision/)")
    check_model(
        evidence.answerability.features, GateFeatures, "gate (storage/kb/assets/decision/gate.yaml)"
    )
    check_model(
        evidence.page_choice.features,
        CandidateFeatures,
        "page choice (storage/kb/assets/decision/page_choice.yaml)",
    )
    check_model(
        evidence.quote.features, UnitFeatures, "quote model (quote.yaml in storage/kb/assets/decision/)"
    )


def code_features(question: str, answering: str, texts: Sequence[str]) -> tuple[float, float]:
    """(``code_explained``, ``code_unexplained``): whether the answering page holds the code
    the question names, and whether the pages explain other codes of its family but not this one.

    >>> code_features("What does PAY-407 mean?", "PAY-101: declined.", ["PAY-101: declined."])
    (0.0, 1.0)
    """
    return (
        float(bool(explained_codes(question, answering, texts))),
        float(bool(undocumented_codes(question, answering, texts))),
    )


def _candidate(
    found: PassageReading,
    relevance: float,
    extras: PageExtras | None,
    codes: tuple[float, float],
    page: PageReading,
) -> CandidateFeatures:
    return CandidateFeatures(
        reading=found.score,
        relevance=round(relevance, 4),
        window_coverage=found.coverage,
        window_similarity=found.similarity,
        section_coverage=found.section,
        code_explained=codes[0],
        code_unexplained=codes[1],
        page_coverage=page.coverage,
        page_missing_rare=page.missing_rare,
        page_phrases=page.phrases,
        quote_coverage=page.quote_coverage,
        navigation=page.navigation,
        **(
            {
                "learned": extras.learned,
                "title": extras.title,
                "conversation": extras.conversation,
                "behind": extras.behind,
                "rank": extras.rank,
                "fused": extras.fused,
            }
            if extras is not None
            else {}
        ),
    )


@dataclass(frozen=True)
class PageReading:
    """What the customer named, on one candidate's page (``tasks/page_features.py``)."""

    coverage: float
    missing_rare: float
    phrases: float
    quote_coverage: float
    navigation: float


def read_pages(
    scorer: EvidenceScorer,
    question: str,
    passages: Sequence[Passage],
    indices: Sequence[int],
    readings: Sequence[PassageReading | None],
) -> list[PageReading | None]:
    """Per candidate: its page (title and every retrieved passage of it) and its quote read
    for the subject the question names."""
    weights = subject_weights(scorer, question)
    stats = scorer.term_stats()
    pages: dict[str, str] = {}
    for passage in passages:
        pages[passage.source_id] = f"{pages.get(passage.source_id, passage.title)}\n{passage.text}"
    read: list[PageReading | None] = []
    for index, found in zip(indices, readings, strict=True):
        if found is None:
            read.append(None)
            continue
        page = pages[passages[index].source_id]
        quoted = " ".join(quote(found.focus, question))
        page_terms, quote_terms = scorer.encoders.bm25.document_terms([page, quoted or "-"])
        held_on_page, missing = held(weights, page_terms, stats)
        read.append(
            PageReading(
                coverage=held_on_page,
                missing_rare=missing,
                phrases=phrase_share(question, page),
                quote_coverage=round(coverage(weights, quote_terms), 4) if quoted else 0.0,
                navigation=navigation(found.focus.units),
            )
        )
    return read


def _with_title_other(candidates: list[Candidate]) -> list[Candidate]:
    """Each candidate with how much more of the message another page's title names."""
    return [
        c.model_copy(
            update={
                "features": c.features.model_copy(
                    update={
                        "title_other": round(
                            max(
                                (o.features.title for o in candidates if o.page != c.page),
                                default=c.features.title,
                            )
                            - c.features.title,
                            4,
                        )
                    }
                )
            }
        )
        for c in candidates
    ]


def read_phrasing(
    scorer: EvidenceScorer,
    evidence: EvidenceSettings,
    phrasing: str,
    passages: Sequence[Passage],
    subject: Sequence[str] = (),
    message: str = "",
) -> tuple[PhrasingReading, dict[int, Focus]]:
    """Stage 1: one phrasing against the passages: every candidate's features, and where in
    each candidate an answer would be (its :class:`Focus`, for the quote)."""
    if not passages:
        return PhrasingReading(phrasing=phrasing), {}
    texts = [p.text for p in passages]
    question = as_the_pages_read(scorer, phrasing, texts)
    relevance = scorer.relevance(question, texts)
    indices = candidate_indices(relevance, [p.source_id for p in passages], subject)
    readings, message_features = read(scorer, question, texts, relevance, indices)
    weighs_pages = bool(evidence.page_choice.weights) or evidence.reads_learned
    extras = (
        page_rows(scorer, question, passages, relevance, indices, subject, message)
        if weighs_pages
        else [None] * len(indices)
    )
    pages = read_pages(scorer, question, passages, indices, readings)
    candidates: list[Candidate] = []
    focuses: dict[int, Focus] = {}
    for index, found, extra, page in zip(indices, readings, extras, pages, strict=True):
        if found is None or page is None:
            continue
        codes = code_features(question, texts[index], texts)
        features = _candidate(found, relevance[index], extra, codes, page)
        candidates.append(Candidate(passage=index, page=passages[index].source_id, features=features))
        focuses[index] = found.focus
    reading = PhrasingReading(
        phrasing=phrasing,
        relevance=[round(r, 4) for r in relevance],
        message=message_features,
        candidates=_with_title_other(candidates),
    )
    return reading, focuses


def action_of(evidence: EvidenceSettings, probability: float) -> DecisionAction:
    """The operating points' action for a probability.

    >>> from config.settings import load_settings
    >>> evidence = load_settings().evidence
    >>> action_of(evidence, 0.99), action_of(evidence, 0.0)
    ('answer', 'refuse')
    """
    answer_at, refuse_below = operating_points(evidence)
    if probability >= answer_at:
        return "answer"
    return "refuse" if probability < refuse_below else "suggest"


def settle_phrasing(reading: PhrasingReading, evidence: EvidenceSettings) -> Decision:
    """Stage 2 for one phrasing: the page choice's candidate, the gate's probability and the
    action."""
    if not reading.relevance:
        return Decision(question=reading.phrasing)
    chosen: Candidate | None = None
    scored = list(reading.candidates)
    if scored:
        pick, scores = choose(evidence.page_choice, [c.features for c in scored])
        scored = [c.model_copy(update={"score": s}) for c, s in zip(scored, scores, strict=True)]
        chosen = scored[pick]
    rival = max((c.score for c in scored if chosen and c.page != chosen.page), default=0.0)
    gate = GateFeatures.of(
        chosen.features if chosen else None,
        reading.message,
        chosen.score if chosen else 0.0,
        (chosen.score - rival) if chosen else 0.0,
    )
    probability = round(logistic_probability(evidence.answerability, gate), 4)
    return Decision(
        action=action_of(evidence, probability),
        probability=probability,
        question=reading.phrasing,
        source_id=chosen.page if chosen else "",
        passage_index=chosen.passage if chosen else None,
        features=gate,
        contributions={
            name: round(term, 3) for name, term in linear_terms(evidence.answerability, gate).items()
        },
        relevance=reading.relevance,
        candidates=scored,
    )


def settle(
    readings: Sequence[PhrasingReading], evidence: EvidenceSettings, subject: Sequence[str] = ()
) -> Decision:
    """Stage 2: the decision over every phrasing read, the one the evidence supports best.

    A phrasing that the conversation's page answers wins over another page's, however strong
    (a follow-up belongs to the page the conversation is about); when none of them answers,
    the strongest reading decides. Pure: training settles recorded readings with other models.
    """
    options = [settle_phrasing(r, evidence) for r in readings]
    if not options:
        return Decision()
    on_subject = [d for d in options if d.source_id in subject and d.action == "answer"]
    best = max(on_subject or options, key=lambda d: (_ACTION_RANK[d.action], d.probability))
    return best.model_copy(update={"readings": list(readings)})


def unrelated_suggestion_refused(decision: Decision, message: str, passage: str) -> Decision:
    """A suggestion ("this article may help") for a message that names an error code of a
    family the page never mentions is refused instead: a sign-in error SSO-102 is not helped
    by the failed-payments article when the SSO article is above the customer's plan."""
    if not foreign_error_codes(message, passage):
        return decision
    return decision.model_copy(
        update={"action": "refuse", "why": "the page never mentions the error code's family"}
    )


def why(decision: Decision, evidence: EvidenceSettings) -> str:
    """The operating point that settled the action, in words."""
    answer_at, refuse_below = operating_points(evidence)
    if decision.action == "answer":
        return f"the page answers: probability {decision.probability:.3f} >= {answer_at:g}"
    if decision.action == "suggest":
        return (
            f"undecided: probability {decision.probability:.3f} "
            f"between {refuse_below:g} and {answer_at:g}"
        )
    if not decision.candidates:
        return "no page to read"
    return f"no page answers: probability {decision.probability:.3f} < {refuse_below:g}"


def read_message(
    scorer: EvidenceScorer,
    settings: Settings,
    message: str,
    conversation: Conversation,
    passages: Sequence[Passage],
) -> tuple[list[PhrasingReading], dict[str, dict[int, Focus]]]:
    """Stage 1 for every phrasing of the message: the readings ``settle`` weighs, and where in
    each candidate an answer would be (per phrasing, for the quote)."""
    readings: list[PhrasingReading] = []
    focuses: dict[str, dict[int, Focus]] = {}
    for phrasing in dict.fromkeys(q for q in conversation.phrasings if q and q.strip()):
        reading, focuses[phrasing] = read_phrasing(
            scorer, settings.evidence, phrasing, passages, conversation.subject, message
        )
        readings.append(reading)
    return readings, focuses


def quote_of(
    scorer: EvidenceScorer,
    settings: Settings,
    message: str,
    decision: Decision,
    focuses: dict[str, dict[int, Focus]],
    passages: Sequence[Passage],
) -> list[str]:
    """Stage 3: the sentences of the chosen passage an extractive answer quotes."""
    if decision.passage_index is None:
        return []
    where = focuses[decision.question][decision.passage_index]
    text = passages[decision.passage_index].text
    if message and message != decision.question:  # the message's own words pick too
        own = as_the_pages_read(scorer, message, [text])
        where = refocus(scorer, where, decision.question, own, text)
    where = quote_focus(
        scorer, settings.evidence.quote, decision.question, where, passages[decision.passage_index].title
    )
    return quote(where, decision.question, settings.evidence.answer_words)


def decide(
    scorer: EvidenceScorer,
    settings: Settings,
    message: str,
    conversation: Conversation,
    passages: Sequence[Passage],
) -> Decision:
    """The decision for ``message`` over the turn's ``passages``: read, settle, and for an
    answer the quote."""
    readings, focuses = read_message(scorer, settings, message, conversation, passages)
    decision = settle(readings, settings.evidence, conversation.subject)
    decision = decision.model_copy(update={"why": why(decision, settings.evidence)})
    if decision.action == "suggest" and decision.passage_index is not None:
        page = passages[decision.passage_index]
        return unrelated_suggestion_refused(decision, message, f"{page.title}\n{page.text}")
    if decision.action != "answer" or decision.passage_index is None:
        return decision
    picked = quote_of(scorer, settings, message, decision, focuses, passages)
    if not picked:  # the page the gate trusts has no sentence to quote (headings, links)
        return decision.model_copy(
            update={"action": "suggest", "why": f"{decision.why}, but it has nothing quotable"}
        )
    return decision.model_copy(update={"quote": picked})
