"""The learned answerability model: does this window of a passage answer the question?

A cross-encoder fine-tuned from the shipped all-MiniLM-L6-v2 on SQuAD 2.0 (questions with
adversarial unanswerables) by ``training/cross_encoder.py``, exported to int8 ONNX and run
with onnxruntime. It reads (question, window): a window is two adjacent units of a passage
(sentences, list items) with the headings they stand under, the same cut in training and at
turn time (``windows``). The probability that a passage answers is the best window's.

Usage::

    model = load_answerability_model()
    spans = windows(split_units(passage_text), title="Refunds")
    model.probabilities("How long does a refund take?", [w.text for w in spans])   # [0.97, 0.02]
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from storage.text import split_sentences
from tasks.operating_points import sigmoid
from tasks.passage_text import WINDOW, Unit

if TYPE_CHECKING:
    from tokenizers import Encoding, Tokenizer

MAX_TOKENS = 128  # what the model was trained on: the message and one window
QUESTION_TOKENS = 48
BATCH = 4  # windows per ONNX call, of similar length: padding a window to the longest of 16
# cost 30% more time than four calls of four (16 windows: 0.38 s against 0.25 s, one thread)


@dataclass(frozen=True)
class Window:
    """Units ``first .. last - 1`` of a passage, as the model reads them (``text``)."""

    text: str
    first: int
    last: int


def heading_context(units: Sequence[Unit], index: int, title: str = "") -> str:
    """What a unit stands under: the passage's title (else its first heading) and the last
    heading before the unit.

    >>> from tasks.passage_text import split_units
    >>> units = split_units("# Plans\\n## Pro\\nPro costs $15.")
    >>> heading_context(units, 2), heading_context(units, 2, title="Pricing")
    ('Plans > Pro', 'Pricing > Pro')
    """
    above = [units[i].text for i in range(index + 1) if units[i].kind == "heading"]
    first = title or (above[0] if above else "")
    last = above[-1] if above else ""
    return " > ".join(dict.fromkeys(p for p in (first, last) if p))


def windows(units: Sequence[Unit], title: str = "") -> list[Window]:
    """Every run of ``WINDOW`` adjacent units of one section (a window never crosses a heading)
    that holds a quotable unit, read under the section's headings.

    >>> from tasks.passage_text import split_units
    >>> [w.text for w in windows(split_units("## Refunds\\nCards: 5 days. PayPal: 1 day."))]
    ['Refunds. Cards: 5 days. PayPal: 1 day.']
    >>> [w.text for w in windows(split_units("Intro line here.\\n## Pro\\nPro costs $15."), "Plans")]
    ['Plans. Intro line here.', 'Plans > Pro. Pro costs $15.']
    """
    sections: list[list[int]] = [[]]
    for index, unit in enumerate(units):
        if unit.kind == "heading":
            sections.append([])
        else:
            sections[-1].append(index)
    spans: list[Window] = []
    for section in sections:
        for offset in range(max(1, len(section) - WINDOW + 1)) if section else ():
            members = section[offset : offset + WINDOW]
            if not any(units[i].quotable for i in members):
                continue
            text = " ".join(units[i].text for i in members)
            spans.append(
                Window(
                    read_as(heading_context(units, members[0], title), text), members[0], members[-1] + 1
                )
            )
    return spans


def read_as(context: str, text: str) -> str:
    """What the model reads: the headings, then the text.

    >>> read_as("Refunds", "Cards: 5 days."), read_as("", "Cards: 5 days.")
    ('Refunds. Cards: 5 days.', 'Cards: 5 days.')
    """
    return f"{context}. {text}" if context else text


def pair_tokenizer(path: Path) -> Tokenizer:
    """The model's tokenizer, cutting (message, window) pairs the way it was trained."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.enable_truncation(MAX_TOKENS, strategy="only_second")
    tokenizer.no_padding()
    return tokenizer


def question_tokens(tokenizer: Tokenizer, text: str) -> tuple[int, list[tuple[int, int]]]:
    """How many word pieces ``text`` holds (counted up to ``MAX_TOKENS``) and the character
    span of each. ``text`` is read as the *second* text of a pair, the one the tokenizer's
    ``only_second`` truncation may cut: read alone, a text over ``MAX_TOKENS`` would make it
    raise ("Second sequence not provided")."""
    encoding = tokenizer.encode("", text, add_special_tokens=False)
    return len(encoding.ids), list(encoding.offsets)


def clip_question(tokenizer: Tokenizer, question: str) -> str:
    """The message within ``QUESTION_TOKENS`` word pieces (the window gets the rest): whole
    when it fits; else its sentences that ask (ending in "?") first, then the others, each kept
    whole while it fits, in the message's order; when none fits, the message's first pieces.

    >>> from storage.kb.model_files import answerability_dir
    >>> tokenizer = pair_tokenizer(answerability_dir() / "tokenizer.json")
    >>> clip_question(tokenizer, "Refund time?")
    'Refund time?'
    >>> long = "We were charged twice this month for one workspace. " * 8 + "When is it refunded?"
    >>> clip_question(tokenizer, long)[-64:]
    'charged twice this month for one workspace. When is it refunded?'
    >>> clip_question(tokenizer, "!" * 500) == "!" * QUESTION_TOKENS
    True
    """
    count, offsets = question_tokens(tokenizer, question)
    if count <= QUESTION_TOKENS:
        return question
    sentences = split_sentences(" ".join(question.split()))
    asking = sorted(range(len(sentences)), key=lambda i: not sentences[i].endswith("?"))
    kept: set[int] = set()
    budget = QUESTION_TOKENS
    for index in asking:
        size = question_tokens(tokenizer, sentences[index])[0]
        if size <= budget:
            kept.add(index)
            budget -= size
    if kept:
        return " ".join(sentences[i] for i in sorted(kept))
    return question[: offsets[QUESTION_TOKENS - 1][1]]


def encode_pairs(tokenizer: Tokenizer, pairs: Sequence[tuple[str, str]]) -> dict[str, np.ndarray]:
    """The model's inputs for (message, window) pairs, padded to the longest; training and
    the product encode with this one function."""
    return padded(tokenizer.encode_batch([(clip_question(tokenizer, q), t) for q, t in pairs]))


def padded(encodings: Sequence[Encoding]) -> dict[str, np.ndarray]:
    """Tokenized pairs as the model's input arrays, padded to the longest."""
    width = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for row, encoding in enumerate(encodings):
        n = len(encoding.ids)
        ids[row, :n], mask[row, :n], types[row, :n] = encoding.ids, 1, encoding.type_ids
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


class AnswerabilityModel:
    """The int8 ONNX cross-encoder with its tokenizer; thread-safe, one session per process."""

    def __init__(self, model_dir: Path, threads: int = 0) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        # every call has its own shape (1-16 windows, up to 128 tokens): an arena keeps the
        # largest of each and grew 118 MB over 150 varied calls, 40 MB without (time +8%)
        options.enable_cpu_mem_arena = False
        self._session = ort.InferenceSession(
            str(model_dir / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tokenizer = pair_tokenizer(model_dir / "tokenizer.json")
        self._lock = threading.Lock()

    def probabilities(self, question: str, texts: Sequence[str]) -> list[float]:
        """P(answers) for each text read against the question: the texts in order of length,
        ``BATCH`` at a time, so that little of a call is padding."""
        if not texts:
            return []
        clipped = clip_question(self._tokenizer, question)
        encodings = self._tokenizer.encode_batch([(clipped, t) for t in texts])
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        scores = [0.0] * len(texts)
        for start in range(0, len(order), BATCH):
            part = order[start : start + BATCH]
            feed = padded([encodings[i] for i in part])
            # one call at a time: side by side (ONNX Runtime allows it) the pilot's 20-client
            # load ran at 0.89x on 2 cores, where the other turns' work already fills the
            # second core (bench.service, stop 73), though the model alone reads 2x faster
            with self._lock:
                logits = self._session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[0]
            for index, logit in zip(part, np.asarray(logits).reshape(-1), strict=True):
                scores[index] = sigmoid(float(logit))
        return scores


@lru_cache(maxsize=2)
def load_answerability_model(model_dir: Path | None = None, threads: int = 0) -> AnswerabilityModel:
    """The shipped model (``storage/kb/assets/answerability``), loaded once per process;
    ``threads``: ONNX Runtime's intra-op threads (0: its default, every core)."""
    from storage.kb.model_files import answerability_dir

    return AnswerabilityModel(answerability_dir(model_dir), threads)
