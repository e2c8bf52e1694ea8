"""Text encoders: dense + token embeddings from one ONNX pass, and BM25 sparse vectors.

Usage::

    from storage.kb.embeddings import load_encoders
    encoders = load_encoders(settings)
    [doc] = encoders.dense.encode(["Refunds take 5 days."])
    doc.dense        # 384 floats, L2-normalised mean of the token vectors
    doc.tokens       # one L2-normalised 384-vector per real token (padding dropped)
    encoders.bm25.encode_query("refund")   # SparseVec(indices, values)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from config.settings import Bm25Settings, EmbeddingSettings, Settings
from storage.kb.model_files import bm25_dir, minilm_dir
from storage.lru import LruCache
from storage.qdrant.store import SparseVec

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
CACHE_SIZE = 512
CACHED_CALL_TEXTS = 4
CACHED_TEXT_CHARS = 2000
TERMS_CACHE_SIZE = 8192


@dataclass(frozen=True)
class DenseEncoding:
    """The pooled vector and the per-token vectors of one text."""

    dense: np.ndarray
    tokens: np.ndarray


class DenseEncoder:
    """MiniLM through fastembed; one forward pass yields both pooled and token vectors."""

    def __init__(self, settings: EmbeddingSettings) -> None:
        from fastembed import TextEmbedding

        model_dir = settings.model_dir
        if model_dir is None and settings.model == MINILM:
            model_dir = minilm_dir(settings.max_tokens)
        self.batch_size = settings.batch_size
        self.threads = settings.threads  # None: ONNX Runtime's default (every core)
        self._cache: LruCache[str, DenseEncoding] = LruCache(CACHE_SIZE)
        self._model = TextEmbedding(
            settings.model,
            specific_model_path=str(model_dir) if model_dir else None,
            threads=settings.threads,
            local_files_only=model_dir is None,
            # batches of every length: an arena would keep the largest of each (see
            # tasks/answerability_model.py)
            enable_cpu_mem_arena=False,
        )

    @cached_property
    def dim(self) -> int:
        return int(self.encode(["dimension probe"])[0].dense.shape[0])

    def is_whole_word(self, word: str) -> bool:
        """Whether the tokenizer's vocabulary holds ``word`` whole (a common word spelt
        right: "event" yes, the typo "disablilty" no)."""
        model: Any = self._model.model  # fastembed's ONNX model: its tokenizer
        return model.tokenizer.token_to_id(word.lower()) is not None

    def encode(self, texts: Sequence[str]) -> list[DenseEncoding]:
        """Encode texts in batches, shortest first, returned in input order.

        A call with a few short texts (a customer's message: searched, stored twice in the
        session, recalled from memory) is answered from a small cache shared by every caller,
        so one message is encoded once per turn."""
        if len(texts) > CACHED_CALL_TEXTS or any(len(t) > CACHED_TEXT_CHARS for t in texts):
            return self._encode_all(texts)
        return self._cache.get_many(texts, self._encode_all)

    def _encode_all(self, texts: Sequence[str]) -> list[DenseEncoding]:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        results: list[DenseEncoding | None] = [None] * len(texts)
        for start in range(0, len(order), self.batch_size):
            batch_ids = order[start : start + self.batch_size]
            for index, encoding in zip(
                batch_ids, self._encode_batch([texts[i] for i in batch_ids]), strict=True
            ):
                results[index] = encoding
        return [r for r in results if r is not None]

    def _encode_batch(self, texts: list[str]) -> list[DenseEncoding]:
        model: Any = self._model.model
        output = model.onnx_embed(texts)
        hidden = np.asarray(output.model_output, dtype=np.float32)
        mask = np.asarray(output.attention_mask, dtype=np.float32)
        pooled = (hidden * mask[..., None]).sum(axis=1) / np.maximum(mask.sum(axis=1), 1)[:, None]
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        norms = np.maximum(np.linalg.norm(hidden, axis=2, keepdims=True), 1e-12)
        unit_tokens = hidden / norms
        encodings = []
        for row in range(len(texts)):
            length = int(mask[row].sum())
            encodings.append(DenseEncoding(dense=pooled[row], tokens=unit_tokens[row, :length]))
        return encodings


class Bm25Encoder:
    """fastembed's Qdrant/bm25 with the shipped stopword list (checked, never silently empty)."""

    def __init__(self, settings: Bm25Settings) -> None:
        from fastembed import SparseTextEmbedding

        directory = bm25_dir(settings.language, settings.model_dir)
        self._model = SparseTextEmbedding(
            settings.model, specific_model_path=str(directory), language=settings.language
        )
        stopwords = getattr(self._model.model, "stopwords", None)
        if not stopwords:
            raise RuntimeError(f"BM25 loaded no stopwords from {directory}")
        self._terms: LruCache[str, frozenset[int]] = LruCache(TERMS_CACHE_SIZE)

    def encode_documents(self, texts: Sequence[str]) -> list[SparseVec]:
        return [_sparse(e) for e in self._model.embed(list(texts))]

    def document_terms(self, texts: Sequence[str]) -> list[frozenset[int]]:
        """The BM25 terms of each text; the passages and sentences the turns read are kept."""
        return self._terms.get_many(
            texts, lambda missing: [frozenset(v.indices) for v in self.encode_documents(missing)]
        )

    def encode_query(self, text: str) -> SparseVec:
        return _sparse(next(iter(self._model.query_embed(text))))


def _sparse(embedding: object) -> SparseVec:
    indices = [int(i) for i in embedding.indices]  # type: ignore[attr-defined]
    values = [float(v) for v in embedding.values]  # type: ignore[attr-defined]
    return SparseVec(indices, values)


@dataclass
class Encoders:
    dense: DenseEncoder
    bm25: Bm25Encoder


_CACHE: dict[tuple[EmbeddingSettings, Bm25Settings], Encoders] = {}


def load_encoders(settings: Settings) -> Encoders:
    """Load (once per process and settings) the dense and BM25 encoders."""
    key = (settings.embeddings, settings.bm25)
    if key not in _CACHE:
        _CACHE[key] = Encoders(DenseEncoder(settings.embeddings), Bm25Encoder(settings.bm25))
    return _CACHE[key]
