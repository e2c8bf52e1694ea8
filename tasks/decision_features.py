"""The answer decision's features: one frozen schema that the turn and ``training/`` share.

A turn reads each phrasing of the message against its candidate passages once
(:class:`PhrasingReading`, ``tasks.decision.read_phrasing``); everything after that (which
page, how sure, which action) is a pure function of these records and the fitted models
(``tasks.decision.settle``). The trace keeps them, and the training scripts fit the page
choice and the gate on the very records the product computed, so a feature has one name, one
meaning and one place where it is computed.

A fitted model names the fields it weighs (storage/kb/assets/decision/*.yaml);
``check_model`` refuses a name that is not a field here.

Usage::

    features = CandidateFeatures(reading=1.4, relevance=0.71, learned=0.93)
    GateFeatures.of(features, MessageFeatures(passage_relevance=0.71)).learned   # 0.93
    value(features, "learned")                                                     # 0.93
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CandidateFeatures(_Frozen):
    """One candidate passage as the page choice weighs it, and the window reading that the
    gate weighs when it is chosen."""

    reading: float = 0.0  # its best window's coverage + MaxSim (+ headings): tasks/answerability
    relevance: float = 0.0  # how close the passage reads to the phrasing (MaxSim)
    learned: float = 0.0  # the cross-encoder's probability for its best window
    title: float = 0.0  # how much of the customer's own message its page title names
    conversation: float = 0.0  # 1: the page the conversation is about
    behind: float = 0.0  # how far its relevance is behind the most relevant candidate's
    rank: float = 0.0  # 1 / (1 + its place among the candidates)
    fused: float = 0.0  # retrieval's fused score
    window_coverage: float = 0.0  # the phrasing's rare terms its best window holds
    window_similarity: float = 0.0  # that window's MaxSim
    section_coverage: float = 0.0  # ... with the headings it stands under
    code_explained: float = 0.0  # 1: it holds the documented code the message names
    code_unexplained: float = 0.0  # 1: the pages explain that code's family, not this code
    # what the customer named, on this page (tasks/page_features.py): the page is its title
    # and every retrieved passage of it; the quote, the units an answer from it would quote
    page_coverage: float = 0.0  # the phrasing's subject terms the page holds (IDF-weighted)
    page_missing_rare: float = 0.0  # how rare the rarest subject term the page lacks is
    page_phrases: float = 0.0  # the subject's two-word phrases standing on the page
    quote_coverage: float = 0.0  # the subject terms the quote holds
    title_other: float = 0.0  # how much more of the message another page's title names
    navigation: float = 0.0  # the share of the passage's units that only point elsewhere


class MessageFeatures(_Frozen):
    """The phrasing against all the passages (whatever page is chosen)."""

    passage_relevance: float = 0.0  # the most relevant passage's relevance
    margin: float = 0.0  # its lead over the second
    coverage: float = 0.0  # the share of the phrasing's terms that some passage holds
    missing_rare: float = 0.0  # how rare the rarest term no passage holds is (0..1)


class GateFeatures(_Frozen):
    """What the gate weighs: the chosen candidate's reading and the phrasing's."""

    window_coverage: float = 0.0
    window_similarity: float = 0.0
    section_coverage: float = 0.0
    passage_relevance: float = 0.0
    coverage: float = 0.0
    missing_rare: float = 0.0
    margin: float = 0.0
    learned: float = 0.0
    code_explained: float = 0.0
    code_unexplained: float = 0.0
    page_coverage: float = 0.0
    page_missing_rare: float = 0.0
    page_phrases: float = 0.0
    quote_coverage: float = 0.0
    title_other: float = 0.0
    navigation: float = 0.0
    relevance: float = 0.0  # the chosen passage's own relevance (not the most relevant one's)
    choice: float = 0.0  # the page choice's score for it
    choice_margin: float = 0.0  # its lead over the best candidate of another page

    @classmethod
    def of(
        cls,
        chosen: CandidateFeatures | None,
        message: MessageFeatures,
        choice: float = 0.0,
        choice_margin: float = 0.0,
    ) -> GateFeatures:
        """The gate's features with ``chosen`` as the answering candidate (None: no
        candidate), the page choice's score for it and its lead over another page's best."""
        picked = chosen or CandidateFeatures()
        return cls(
            **message.model_dump(),
            **{name: getattr(picked, name) for name in _FROM_CANDIDATE},
            choice=round(choice, 4),
            choice_margin=round(choice_margin, 4),
        )


_FROM_CANDIDATE = tuple(n for n in GateFeatures.model_fields if n in CandidateFeatures.model_fields)


class Candidate(_Frozen):
    """A candidate passage of one phrasing: which, of what page, and its features."""

    passage: int  # its index among the turn's passages
    page: str
    features: CandidateFeatures
    score: float = 0.0  # the page choice's probability that it is the page that answers


class PhrasingReading(_Frozen):
    """One phrasing of the message read against the turn's passages: what ``settle`` needs."""

    phrasing: str  # as the turn judged it (the message, its question, a follow-up's resolution)
    relevance: list[float] = Field(default_factory=list)  # per passage
    message: MessageFeatures = Field(default_factory=MessageFeatures)
    candidates: list[Candidate] = Field(default_factory=list)


class UnitFeatures(_Frozen):
    """One unit (sentence, list item) of the answering passage as the quote weighs it
    (``tasks/quote_model.py``)."""

    reading: float = 0.0  # its window-reading focus as a share of the passage's best
    best_reading: float = 0.0  # 1: the best-focused unit
    learned: float = 0.0  # the cross-encoder's highest probability of a window holding it
    learned_share: float = 0.0  # that as a share of the passage's highest
    best_learned: float = 0.0  # 1: a unit of the cross-encoder's best window
    item: float = 0.0  # 1: a list item
    after_lead_in: float = 0.0  # 1: the unit before it ends with ":"
    words: float = 0.0  # log(1 + its words)
    position: float = 0.0  # its place in the passage, 0 (first) .. 1 (last)
    foreign_name: float = 0.0  # 1: it names a proper noun or code the question does not


FeatureRecord = CandidateFeatures | GateFeatures | UnitFeatures


def value(features: FeatureRecord, name: str) -> float:
    """The named feature of a record (a fitted model's ``features`` entry)."""
    return float(getattr(features, name))


def check_model(names: list[str], record: type[FeatureRecord], what: str) -> None:
    """Refuse a fitted model that weighs a feature the record does not have.

    >>> check_model(["learned"], GateFeatures, "gate")
    >>> check_model(["learnt"], GateFeatures, "gate")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the gate weighs 'learnt', which is not a feature (GateFeatures: window_coverage, ...)
    """
    unknown = [n for n in names if n not in record.model_fields]
    if unknown:
        raise ValueError(
            f"the {what} weighs {unknown[0]!r}, which is not a feature "
            f"({record.__name__}: {', '.join(record.model_fields)})"
        )
