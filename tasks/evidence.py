"""Evidence checks that decide over the model: passage relevance, sentence support, extraction.

Scores use the MiniLM token vectors (late interaction, MaxSim averaged over the query's word
pieces) and plain lexical overlap of content words. Thresholds live in config (``evidence:``)
and were calibrated on the example knowledge base (``bench/calibrate_evidence.py``).

Usage::

    scorer = EvidenceScorer(encoders, settings.evidence)   # support thresholds from config
    scores = scorer.relevance("refund time?", [p.text for p in passages])
    support = scorer.support("Refunds take 5 days.", passages)      # per sentence
    answer, used = scorer.extract("refund time?", passages)
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from config.settings import EvidenceSettings
from storage.embeddings import Encoders
from storage.model_files import BM25_ASSETS

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[a-z0-9][a-z0-9\-]*")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
TOKEN_CACHE_SIZE = 4096
_STOP = frozenset((BM25_ASSETS / "english.txt").read_text(encoding="utf-8").split())


def sentences(text: str) -> list[str]:
    """Sentences and list items of ``text``, markdown headings dropped."""
    parts = [p.strip(" -*\t") for p in _SENTENCE.split(text)]
    return [p for p in parts if len(p) > 2 and not p.startswith("#")]


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1}


@dataclass(frozen=True)
class SentenceSupport:
    sentence: str
    passage_index: int | None
    semantic: float
    lexical: float
    supported: bool


class EvidenceScorer:
    """Late-interaction and lexical evidence over the passages of one turn."""

    def __init__(self, encoders: Encoders, thresholds: EvidenceSettings | None = None) -> None:
        thresholds = thresholds or EvidenceSettings()
        self.encoders = encoders
        self.min_semantic = thresholds.support_semantic
        self.min_lexical = thresholds.support_lexical
        # a turn scores the same passage sentences for relevance, support and extraction
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()

    def _tokens(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Word-piece vectors per text ([CLS]/[SEP] carry no evidence), encoded once each."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        for text, encoding in zip(missing, self.encoders.dense.encode(missing), strict=True):
            tokens = encoding.tokens
            self._cache[text] = tokens[1:-1] if len(tokens) > 2 else tokens
        found = []
        for text in texts:
            self._cache.move_to_end(text)
            found.append(self._cache[text])
        while len(self._cache) > TOKEN_CACHE_SIZE:
            self._cache.popitem(last=False)
        return found

    @staticmethod
    def maxsim(query: np.ndarray, document: np.ndarray) -> float:
        if len(query) == 0 or len(document) == 0:
            return 0.0
        return float((query @ document.T).max(axis=1).mean())

    def relevance(self, query: str, passages: Sequence[str]) -> list[float]:
        """MaxSim of the query against each passage's sentences (a passage may exceed 256 tokens)."""
        if not passages:
            return []
        query_tokens = self._tokens([query])[0]
        scores = []
        for passage in passages:
            parts = sentences(passage) or [passage]
            doc_tokens = np.concatenate(self._tokens(parts))
            scores.append(self.maxsim(query_tokens, doc_tokens))
        return scores

    def support(self, answer: str, passages: Sequence[str]) -> list[SentenceSupport]:
        """For each answer sentence: the passage that supports it best, and whether enough."""
        answer_sentences = sentences(answer)
        if not answer_sentences or not passages:
            return [SentenceSupport(s, None, 0.0, 0.0, False) for s in answer_sentences]
        passage_tokens = [np.concatenate(self._tokens(sentences(p) or [p])) for p in passages]
        passage_words = [content_words(p) for p in passages]
        results = []
        for sentence, tokens in zip(answer_sentences, self._tokens(answer_sentences), strict=True):
            words = content_words(sentence)
            best = (None, 0.0, 0.0)
            for index, (doc_tokens, doc_words) in enumerate(zip(passage_tokens, passage_words,
                                                                 strict=True)):
                semantic = self.maxsim(tokens, doc_tokens)
                lexical = len(words & doc_words) / len(words) if words else 0.0
                if semantic + lexical > best[1] + best[2]:
                    best = (index, semantic, lexical)
            index, semantic, lexical = best
            # every number the sentence states must stand in the passage it leans on
            numbers_ok = index is not None and set(_NUMBER.findall(sentence)) <= set(
                _NUMBER.findall(passages[index]))
            supported = (semantic >= self.min_semantic and lexical >= self.min_lexical
                         and numbers_ok)
            results.append(SentenceSupport(sentence, index, semantic, lexical, supported))
        return results

    def extract(self, query: str, passages: Sequence[str], max_sentences: int = 2,
                from_top: int = 2) -> list[tuple[str, int]]:
        """The sentences of the top passages closest to the query, as (sentence, passage index)."""
        query_tokens = self._tokens([query])[0]
        candidates: list[tuple[float, int, int, str]] = []
        for index, passage in enumerate(passages[:from_top]):
            parts = sentences(passage)
            if not parts:
                continue
            for order, (part, tokens) in enumerate(zip(parts, self._tokens(parts), strict=True)):
                candidates.append((self.maxsim(query_tokens, tokens), index, order, part))
        best = sorted(candidates, reverse=True)[:max_sentences]
        return [(part, index) for _, index, _, part in sorted(best, key=lambda c: (c[1], c[2]))]
