"""Where nobody replied to a gap's questions: a model's draft of the article, grounded only in
the knowledge-base passages nearest those questions and checked sentence by sentence against
them with the responder's support check (``tasks.evidence.EvidenceScorer.support``).

The model writes only where the configuration puts the responder on the model path
(``roles.respond``: ``model``, or ``auto`` with a model server; ``tasks.gates.model_role``):
with the shipped default (the local model, every role ``auto``) no model is called and the
draft stays the skeleton of the gap's questions. Nor is it called where the knowledge base
holds nothing near the questions (a model must not invent a policy), and a call that fails or
outlives its deadline (``turn_timeout_s``, as a turn's) leaves the skeleton too.

Every sentence the passages do not support is marked for the lead (``UNSUPPORTED`` before
it, and listed in ``unsupported``): nothing unsupported goes out unseen.

Usage::

    write = model_writer(runtime, staff_slots(who))     # None: no model drafts here
    drafted = write(["Can I get my refund as store credit?"]) if write else None
    drafted.text, drafted.unsupported, drafted.pages
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from agents.deadline import expired, turn_deadline
from storage.retrieval.request import RetrievalRequest
from tasks.evidence import sentences
from tasks.gates import model_role
from tasks.replay import NEAR_FLOOR

if TYPE_CHECKING:
    from agents.runtime import TurnRuntime
    from service.domain.topics import Encode
    from storage.retrieval.protocol import Retriever
    from tasks.evidence import EvidenceScorer

log = logging.getLogger(__name__)

UNSUPPORTED = "(check: not found in the knowledge base)"
PER_QUESTION = 2  # passages searched per question ...
MAX_PASSAGES = 6  # ... and at most this many shown to the model
MAX_QUESTIONS = 8  # the gap's first distinct questions the model is asked to answer
PROMPT = (
    "You write a short help-centre article for a support team. Answer the customers' "
    "questions below using ONLY facts stated in the passages. Do not add any policy, "
    "number, price, time or promise the passages do not state; where the passages do not "
    "answer a question, leave it out. Write plain sentences, at most 8, no greeting.\n\n"
    "Questions:\n{questions}\n\nPassages:\n{passages}\n\nArticle:"
)


@dataclass(frozen=True)
class ModelDraft:
    """The checked body (each unsupported sentence marked), those sentences, and the pages the
    passages came from."""

    text: str
    unsupported: list[str]
    pages: list[str]


@dataclass(frozen=True)
class Near:
    text: str
    source_id: str


class Drafter(Protocol):
    """What the draft needs of a model: CrewAI's ``BaseLLM.call`` (this module stays
    framework-free: the adapter lives in agents/crewai/)."""

    def call(self, messages: str) -> object: ...  # a string: the user's message


def drafting_llm(runtime: TurnRuntime) -> Drafter | None:
    """The model the responder calls, as a CrewAI ``BaseLLM`` (``call(messages)``): the CrewAI
    engine's own, else the runtime's model adapted (the AutoGen engine); None without one."""
    llm = getattr(runtime.engine, "llm", None)
    if llm is not None:
        return llm
    raw = getattr(runtime, "llm", None)
    if raw is None:
        return None
    from agents.crewai.llm import crewai_llm

    return crewai_llm(raw)


def near_passages(
    retriever: Retriever,
    encode: Encode,
    questions: Sequence[str],
    slots: Mapping[str, str],
    floor: float = NEAR_FLOOR,
) -> list[Near]:
    """The passages nearest ``questions`` under ``slots`` (the lead's enforced slots, as the
    gap report and the article check search), each at least ``floor`` close in meaning
    (cosine of the dense vectors, as a recent question is to an article in the replay) to
    the question that found it; each passage once, at most ``MAX_PASSAGES``."""
    from service.domain.topics import similarities

    found: dict[str, Near] = {}
    for question in questions:
        results = retriever.search_queries(
            RetrievalRequest([question], dict(slots), top_k=PER_QUESTION, strict=False)
        ).results
        new = [r for r in results if r.text.strip() and r.text not in found]
        if not new:
            continue
        closeness = similarities(encode, question, [r.text for r in new])
        for result, cosine in zip(new, closeness, strict=True):
            if cosine >= floor and result.text not in found:
                found[result.text] = Near(result.text, str(result.metadata.get("source_id", "")))
    return list(found.values())[:MAX_PASSAGES]


def article_prompt(questions: Sequence[str], passages: Sequence[Near]) -> str:
    asked = "\n".join(f"- {q}" for q in questions)
    shown = "\n".join(f"[{i}] {p.text}" for i, p in enumerate(passages, 1))
    return PROMPT.format(questions=asked, passages=shown)


def checked(text: str, passages: Sequence[Near], scorer: EvidenceScorer) -> ModelDraft | None:
    """``text`` checked sentence by sentence against ``passages`` (the responder's support
    check); None when no sentence of it is supported (nothing grounded to edit)."""
    support = scorer.support(text, [p.text for p in passages])
    if not any(s.claim and s.supported for s in support):
        return None
    lines, unsupported, pages = [], [], []
    for s in support:
        if s.claim and not s.supported:
            unsupported.append(s.sentence)
            lines.append(f"{UNSUPPORTED} {s.sentence}")
            continue
        lines.append(s.sentence)
        if s.claim and s.passage_index is not None:
            page = passages[s.passage_index].source_id
            if page and page not in pages:
                pages.append(page)
    return ModelDraft("\n\n".join(lines), unsupported, pages)


def model_writer(
    runtime: TurnRuntime, slots: Mapping[str, str]
) -> Callable[[Sequence[str]], ModelDraft | None] | None:
    """``questions`` -> the model's checked draft (None: nothing near, or the model failed);
    None where the configuration puts no model on the responder's path."""
    settings = runtime.settings
    memory = runtime.memory
    if not model_role(settings, "respond") or memory is None:
        return None
    llm = drafting_llm(runtime)
    if llm is None:
        return None

    def write(questions: Sequence[str]) -> ModelDraft | None:
        asked = list(dict.fromkeys(" ".join(q.split()) for q in questions if q.strip()))
        asked = asked[:MAX_QUESTIONS]
        passages = near_passages(runtime.retriever, memory.encoders.dense.encode, asked, slots)
        if not passages:
            return None  # nothing near in the knowledge base: the skeleton, no model call
        prompt = article_prompt(asked, passages)
        with turn_deadline(time.monotonic() + settings.turn_timeout_s):
            if expired():
                return None
            try:
                reply = llm.call(prompt)
            except Exception as exc:  # a slow or failing model: the skeleton stands
                log.warning("article draft: the model failed (%s: %s)", type(exc).__name__, exc)
                return None
        text = str(reply or "").strip()
        if not text or not sentences(text):
            return None
        return checked(text, passages, runtime.scorer)

    return write
