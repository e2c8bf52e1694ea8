"""How right the small-talk word lists of ``tasks/courtesy.py`` are on real support turns, beside
the same words learned from those turns.

A listed word is small talk: no page must hold it to answer ("hello", "wondering"). For every
word of a grounded turn of ``../shared/datasets/doc2dial-support-train`` (customer turns, and
the agent's reply to each) the pack says whether a passage answering the turn holds it: a chunk,
cut as ingestion cuts (the ``chunking`` settings), of a page holding the turn's evidence
(``doc_ids``) that holds some of that evidence (Snowball stems, the BM25 stemmer). Calling a
word small talk is right when that passage does not hold it. Scored: the lists (customer words
against ``SMALL_TALK``, agent words against ``COURTESY``) and a per-word estimate learned from
the pack out of fold (five folds grouped by page, ``training/dialogue_pack.folds``):
``(held + strength * mean) / (seen + strength)``, the strength by out-of-fold log loss, small
talk below one half (a word never seen is a subject word); the written greetings and thanks of
``examples/intents/message_kinds.jsonl`` count as turns no passage must hold. The held-out packs'
questions (doc2dial-support-dev, and doc2dial-support, reported only) are scored with the
estimate fitted on the whole pack.

The learned words are not shipped: the answer decision's models were fitted on features the
lists define (docs/answering.md); this measures what replacing them would start from.

    python -m training.small_talk

Writes ``bench/results/small_talk.{md,json}``.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import frontmatter
import py_rust_stemmers

from config.settings import load_settings
from evaluation.reporting import ROOT, table, write_results
from storage.kb.chunking import Chunk, chunk_text
from tasks.courtesy import COURTESY, SMALL_TALK, content_words
from training.dialogue_pack import PACK, dialogues, folds

WRITTEN = ROOT / "examples" / "intents" / "message_kinds.jsonl"
WRITTEN_KINDS = ("greeting", "thanks")  # courtesy alone: no page must hold its words
HELD_OUT = {
    "dev": ROOT.parent / "shared" / "datasets" / "doc2dial-support-dev",
    "test": ROOT.parent / "shared" / "datasets" / "doc2dial-support",
}
STRENGTHS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
SEEN_ENOUGH = 3
SMALL_TALK_BELOW = 0.5  # a passage answering the turn more often does not hold the word than holds it
_STEM = py_rust_stemmers.SnowballStemmer("english")


@dataclass(frozen=True)
class Observation:
    """One word of one turn, and whether a page answering the turn holds it."""

    word: str
    held: bool
    side: str  # "customer" or "agent"
    fold: int  # -1: a written example, always fitted on


def held_estimate(seen: int, held: int, mean: float, strength: float) -> float:
    """Held of seen, shrunk toward ``mean`` with the weight of ``strength`` turns.

    >>> round(held_estimate(0, 0, 0.8, 2.0), 2), round(held_estimate(40, 0, 0.8, 2.0), 2)
    (0.8, 0.04)
    """
    return (held + strength * mean) / (seen + strength)


def small_talk(counts: Mapping[str, Sequence[int]], mean: float, strength: float) -> frozenset[str]:
    """The words whose estimate is below :data:`SMALL_TALK_BELOW`; ``counts``: word -> (seen,
    held).

    >>> sorted(small_talk({"hello": (40, 0), "refund": (30, 28), "wife": (1, 0)}, 0.8, 2.0))
    ['hello']
    """
    return frozenset(
        word
        for word, (seen, held) in counts.items()
        if held_estimate(seen, held, mean, strength) < SMALL_TALK_BELOW
    )


def stems(text: str) -> set[str]:
    return {_STEM.stem_word(w) for w in content_words(text)}


def _observe(text: str, held: set[str], side: str, fold: int) -> Iterator[Observation]:
    for word in sorted(content_words(text)):
        yield Observation(word, _STEM.stem_word(word) in held, side, fold)


@dataclass(frozen=True)
class Page:
    """A page's text and its chunks, cut the way ingestion cuts them."""

    text: str
    chunks: tuple[Chunk, ...]


def pages(kb: Path) -> dict[str, Page]:
    """Page id (the file's stem) -> its page, front matter left out."""
    chunking = load_settings().chunking
    found = {}
    for path in sorted(kb.glob("*.md")):
        text = frontmatter.loads(path.read_text(encoding="utf-8")).content
        chunks = chunk_text(text, chunking.max_tokens, chunking.overlap_sentences)
        found[path.stem] = Page(text, tuple(chunks))
    return found


def held_stems(kb: dict[str, Page], doc_ids: Iterable[str], evidence: Iterable[str]) -> set[str]:
    """The stems of every passage (chunk) that holds some of the evidence (its words in order,
    whitespace aside, as the packs normalise it), on every page that holds it: the passages
    that answer the turn."""
    held: set[str] = set()
    spans = [re.compile(r"\s+".join(map(re.escape, e.split()))) for e in evidence if e.split()]
    for page in (kb[d] for d in doc_ids if d in kb):
        for found in filter(None, (span.search(page.text) for span in spans)):
            for chunk in page.chunks:
                if chunk.start < found.end() and chunk.start + len(chunk.text) > found.start():
                    held |= stems(chunk.text)
    return held


def pack_observations(pack: Path = PACK) -> list[Observation]:
    """Every word of every grounded customer turn and of the agent's reply to it."""
    kb = pages(pack / "kb")
    fold_of = folds(pack)
    found: list[Observation] = []
    for dialogue in dialogues(pack):
        turns = dialogue["turns"]
        fold = fold_of[dialogue["doc_id"]]
        for index, turn in enumerate(turns):
            if turn["role"] != "user" or not turn.get("evidence"):
                continue
            held = held_stems(kb, turn["doc_ids"], turn["evidence"])
            found += _observe(turn["text"], held, "customer", fold)
            if index + 1 < len(turns) and turns[index + 1]["role"] == "agent":
                found += _observe(turns[index + 1]["text"], held, "agent", fold)
    return found


def written_observations(path: Path = WRITTEN) -> list[Observation]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return [
        o for r in rows if r["kind"] in WRITTEN_KINDS for o in _observe(r["text"], set(), "customer", -1)
    ]


def held_out_observations(pack: Path) -> list[Observation]:
    """The words of a held-out pack's answerable questions against the passages holding
    their evidence."""
    kb = pages(pack / "kb")
    found: list[Observation] = []
    for line in (pack / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row.get("answerable") and row.get("evidence"):
            held = held_stems(kb, row["doc_ids"], row["evidence"])
            found += _observe(row["question"], held, "customer", 0)
    return found


def counts(observations: Iterable[Observation]) -> dict[str, list[int]]:
    """word -> [seen, held]."""
    seen, held = Counter[str](), Counter[str]()
    for o in observations:
        seen[o.word] += 1
        held[o.word] += o.held
    return {w: [seen[w], held[w]] for w in sorted(seen)}


def scores(called: Iterable[bool], observations: list[Observation]) -> dict[str, float]:
    """Precision, recall and F1 of calling a word small talk (the page does not hold it)."""
    pairs = list(zip(called, [not o.held for o in observations], strict=True))
    hits = sum(c and g for c, g in pairs)
    precision = hits / max(1, sum(c for c, _ in pairs))
    recall = hits / max(1, sum(g for _, g in pairs))
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": round(precision, 3),
        "recall": round(recall, 3),
        "f1": round(f1, 3),
        "words": len(pairs),
    }


def mean_held(observations: Iterable[Observation]) -> float:
    found = list(observations)
    return sum(o.held for o in found) / len(found)


def _row(where: str, system: str, called: list[bool], observations: list[Observation]) -> dict:
    return {"set": where, "system": system, **scores(called, observations)}


def out_of_fold(
    observations: list[Observation], strength: float
) -> list[tuple[Observation, float, frozenset[str]]]:
    """Each pack word with its held estimate and the small talk of a model fitted without its
    fold."""
    found = []
    for fold in sorted({o.fold for o in observations if o.fold >= 0}):
        rest = [o for o in observations if o.fold != fold]
        mean, table_ = mean_held(rest), counts(rest)
        words = small_talk(table_, mean, strength)
        for o in observations:
            if o.fold == fold:
                seen, held = table_.get(o.word, (0, 0))
                found.append((o, held_estimate(seen, held, mean, strength), words))
    return found


def log_loss(scored: list[tuple[Observation, float, frozenset[str]]]) -> float:
    return sum(-math.log(p if o.held else 1 - p) for o, p, _ in scored) / len(scored)


def fit(observations: list[Observation]) -> tuple[float, list[dict]]:
    """The prior's strength by out-of-fold log loss over every pack word, and the grid."""
    grid = [
        {"strength": s, "log_loss": round(log_loss(out_of_fold(observations, s)), 4)} for s in STRENGTHS
    ]
    return min(grid, key=lambda g: g["log_loss"])["strength"], grid


def main() -> None:
    observations = pack_observations() + written_observations()
    strength, grid = fit(observations)
    scored = out_of_fold(observations, strength)
    rows: list[dict] = []
    for side, listed in (("customer", SMALL_TALK), ("agent", COURTESY)):
        words_of_side = [(o, words) for o, _, words in scored if o.side == side]
        where = f"doc2dial-train {side}, out of fold"
        side_obs = [o for o, _ in words_of_side]
        rows.append(_row(where, "learned", [o.word in w for o, w in words_of_side], side_obs))
        rows.append(_row(where, "listed", [o.word in listed for o in side_obs], side_obs))
    table_ = counts(observations)
    mean = mean_held(observations)
    words = small_talk(table_, mean, strength)
    for name, pack in HELD_OUT.items():
        held_out = held_out_observations(pack)
        where = f"doc2dial-support-{name} questions"
        rows.append(_row(where, "learned", [o.word in words for o in held_out], held_out))
        rows.append(_row(where, "listed", [o.word in SMALL_TALK for o in held_out], held_out))
    listed_held = sorted(
        w
        for w in SMALL_TALK
        if table_.get(w, [0, 0])[0] >= SEEN_ENOUGH and 2 * table_[w][1] >= table_[w][0]
    )
    summary = {
        "mean": round(mean, 4),
        "strength": strength,
        "learned_small_talk": sorted(words),
        "listed_but_held": listed_held,
        "observations": len(observations),
        "rows": rows,
        "grid": grid,
    }
    columns = ["set", "system", "precision", "recall", "f1", "words"]
    lines = [
        "# Small-talk words: the lists against real turns (`python -m training.small_talk`)",
        "",
        "Precision, recall and F1 of calling a word small talk, right when the passage answering "
        "the turn does not hold it. `listed`: `tasks/courtesy.py` (customer words: `SMALL_TALK`, "
        f"agent words: `COURTESY`); `learned`: `(held + {strength} * {mean:.3f}) / (seen + "
        f"{strength})` per word fitted on the other folds (the strength by out-of-fold log loss), "
        f"small talk below {SMALL_TALK_BELOW}: {len(words)} of {len(table_)} words seen, fitted on "
        "the whole pack for the held-out packs.",
        "",
        *table(columns, [[r[c] for c in columns] for r in rows]),
        "",
        f"Listed words said in {SEEN_ENOUGH} or more turns whose answering passage held them at "
        f"least half the time ({len(listed_held)}): " + ", ".join(listed_held),
    ]
    write_results("small_talk", lines, summary)


if __name__ == "__main__":
    main()
