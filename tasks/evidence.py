"""Evidence checks that decide over the model: passage relevance and sentence support.

Scores use the MiniLM token vectors (late interaction, MaxSim averaged over the query's word
pieces) and plain lexical overlap of content words. Thresholds live in config (``evidence:``).

Usage::

    scorer = EvidenceScorer(encoders, settings.evidence, kb.term_statistics)
    scores = scorer.relevance("refund time?", [p.text for p in passages])
    scorer.answerable("refund time?", ["Refunds take 5 days."])      # [0.98]
    support = scorer.support("Refunds take 5 days.", passages)      # per sentence

Whether the passages answer at all, and what to quote, is tasks/answerability.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from config.settings import EvidenceSettings
from storage.kb.embeddings import Encoders
from storage.kb.knowledge_base import TermStats
from storage.kb.model_files import answerability_dir
from storage.lru import LruCache
from tasks.answerability_model import load_answerability_model
from tasks.courtesy import content_words, makes_claim
from tasks.facts import missing_facts, negated
from tasks.passage_text import split_units

TOKEN_CACHE_SIZE = 4096
PASSAGE_CACHE_SIZE = 1024


def sentences(text: str) -> list[str]:
    """Sentences, list items, table rows and headings of ``text``, emphasis removed."""
    return [u.text for u in split_units(text)]


@dataclass(frozen=True)
class SentenceSupport:
    """``claim``: the sentence states something; one that does not (courtesy) needs no
    support and is never shown as evidence."""

    sentence: str
    passage_index: int | None
    semantic: float
    lexical: float
    supported: bool
    claim: bool = True


def verified(support: Sequence[SentenceSupport]) -> bool:
    """An answer passes the support check: it makes a claim, and every claim is supported."""
    claims = [s for s in support if s.claim]
    return bool(claims) and all(s.supported for s in claims)


class EvidenceScorer:
    """Late-interaction and lexical evidence over the passages of one turn."""

    def __init__(
        self,
        encoders: Encoders,
        thresholds: EvidenceSettings | None = None,
        term_stats: Callable[[], TermStats] | None = None,
    ) -> None:
        thresholds = thresholds or EvidenceSettings()
        self.encoders = encoders
        # the knowledge base's term statistics weigh rare question terms; without a knowledge
        # base (a custom retriever) every term weighs the same
        self.term_stats = term_stats or (lambda: TermStats(0, {}))
        # the learned model is checked at start: a turn must not be the first to miss it
        self.answerability_dir = (
            answerability_dir(thresholds.model_dir) if thresholds.reads_learned else None
        )
        self._answerable: LruCache[tuple[str, str], float] = LruCache(TOKEN_CACHE_SIZE)
        self.min_semantic = thresholds.support_semantic
        self.min_lexical = thresholds.support_lexical
        self.close_semantic = thresholds.support_semantic_close
        self.close_lexical = thresholds.support_lexical_close
        # a turn scores the same passage sentences for relevance, support and extraction
        self._tokens: LruCache[str, np.ndarray] = LruCache(TOKEN_CACHE_SIZE)
        self._passages: LruCache[str, np.ndarray] = LruCache(PASSAGE_CACHE_SIZE)

    def warm_up(self) -> None:
        """Load and run once what the first turn's gate reads with (the answerability
        model's ONNX session, the encoder's token path), so no customer's turn pays for it.

        >>> scorer.warm_up()  # doctest: +SKIP
        """
        if self.answerability_dir is not None:
            model = load_answerability_model(self.answerability_dir, self.encoders.dense.threads or 0)
            model.probabilities("How long does a refund take?", ["Refunds take five days."])
        self.encoders.dense.encode(["How long does a refund take?"])

    def knows(self, word: str) -> bool:
        """Whether ``word`` is spelt as someone meant it: some chunk of the knowledge base holds
        it (all its BM25 terms) or it is a whole word of the encoder's vocabulary. Without
        term statistics (a custom retriever) every word counts as known."""
        stats = self.term_stats()
        if not stats.chunks or self.encoders.dense.is_whole_word(word):
            return True
        terms = self.encoders.bm25.document_terms([word])[0]
        return all(stats.frequency.get(term, 0) > 0 for term in terms)

    def token_vectors(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Word-piece vectors per text ([CLS]/[SEP] carry no evidence), encoded once each."""

        def encode(missing: list[str]) -> list[np.ndarray]:
            return [
                e.tokens[1:-1] if len(e.tokens) > 2 else e.tokens
                for e in self.encoders.dense.encode(missing)
            ]

        return self._tokens.get_many(texts, encode)

    def answerable(self, question: str, texts: Sequence[str]) -> list[float]:
        """The answerability model's probability that each text answers the question; a
        turn reads the same windows for the gate and the quote, so each is read once."""

        def read(missing: list[tuple[str, str]]) -> list[float]:
            # the same ONNX threads as the encoder's (the pilot: one per turn)
            model = load_answerability_model(self.answerability_dir, self.encoders.dense.threads or 0)
            return model.probabilities(question, [text for _, text in missing])

        return self._answerable.get_many([(question, t) for t in texts], read)

    def passage_tokens(self, passages: Sequence[str]) -> list[np.ndarray]:
        """The word-piece vectors of each passage, sentence by sentence (a passage may exceed
        the encoder's 256 tokens), one matrix per passage."""
        return self._passages.get_many(
            passages,
            lambda missing: [np.concatenate(self.token_vectors(sentences(p) or [p])) for p in missing],
        )

    @staticmethod
    def maxsim(query: np.ndarray, document: np.ndarray) -> float:
        if len(query) == 0 or len(document) == 0:
            return 0.0
        return float((query @ document.T).max(axis=1).mean())

    def _stands_behind(self, sentence: str, tokens: np.ndarray, passage: str) -> bool:
        """Whether the passage's sentence closest to the claim holds its facts and does not
        say the opposite.

        Facts (numbers, names, codes, paths, URLs) must stand in that one sentence: a number
        found elsewhere on the page is not the claim's. On SQuAD 2.0 sentences with one number
        changed, reading the closest two sentences let 3 of 98 through, the closest with its
        neighbours 2, the closest alone none; a reply that joins the facts of two sentences is
        not kept, and the turn answers from the evidence instead. A claim that something is so
        leans on a sentence that does not deny it ("Guests count as paid users" against
        "Guests do not count as paid users"); one that denies something leans on a denial
        among the closest two (a reply may join two sentences of the page)."""
        units = sentences(passage) or [passage]
        scores = [self.maxsim(tokens, unit) for unit in self.token_vectors(units)]
        order = np.argsort(scores)[::-1]
        if missing_facts(sentence, units[order[0]], self.encoders.dense.is_whole_word):
            return False
        if negated(sentence):
            return any(negated(units[i]) for i in order[:2])
        # a claim no one sentence reads close to joins what several say
        return scores[order[0]] < self.close_semantic or not negated(units[order[0]])

    def relevance(self, query: str, passages: Sequence[str]) -> list[float]:
        """MaxSim of the query against each passage's sentences (a passage may exceed 256 tokens)."""
        if not passages:
            return []
        query_tokens = self.token_vectors([query])[0]
        return [self.maxsim(query_tokens, tokens) for tokens in self.passage_tokens(passages)]

    def support(self, answer: str, passages: Sequence[str]) -> list[SentenceSupport]:
        """For each answer sentence: the passage that supports it best, and whether enough."""
        answer_sentences = sentences(answer)
        if not answer_sentences or not passages:
            return [SentenceSupport(s, None, 0.0, 0.0, False) for s in answer_sentences]
        passage_tokens = self.passage_tokens(passages)
        passage_words = [content_words(p) for p in passages]
        results = []
        for sentence, tokens in zip(answer_sentences, self.token_vectors(answer_sentences), strict=True):
            if not makes_claim(sentence):
                results.append(SentenceSupport(sentence, None, 0.0, 0.0, True, claim=False))
                continue
            words = content_words(sentence)
            best: tuple[int | None, float, float] = (None, 0.0, 0.0)
            for index, (doc_tokens, doc_words) in enumerate(
                zip(passage_tokens, passage_words, strict=True)
            ):
                semantic = self.maxsim(tokens, doc_tokens)
                lexical = len(words & doc_words) / len(words) if words else 0.0
                if semantic + lexical > best[1] + best[2]:
                    best = (index, semantic, lexical)
            chosen, semantic, lexical = best
            facts_ok = chosen is not None and self._stands_behind(sentence, tokens, passages[chosen])
            close_enough = semantic >= self.min_semantic or (
                lexical >= self.close_lexical and semantic >= self.close_semantic
            )
            supported = close_enough and lexical >= self.min_lexical and facts_ok
            results.append(SentenceSupport(sentence, chosen, semantic, lexical, supported))
        return results
