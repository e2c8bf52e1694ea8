"""Cross-encoder pairs from the doc2dial training pack: real customer turns against the
windows of real support pages, with the hard negatives the product meets.

For each question turn of ``training/dialogue_pack.py`` (its folds kept on every pair):

* **positives** (``evidence``): the windows (``tasks.answerability_model.windows``: two
  adjacent units under the page's headings, what the product reads) of the pages that hold
  the turn's evidence whose units hold the evidence's words (``evidence_units``), the best two;
* **the page's other windows** (``same_page``): of the dialogue's page, the ``SAME_PAGE``
  windows without evidence that read closest to the turn (MaxSim of the product's MiniLM token
  vectors) and one at random: the right page, the wrong place;
* **neighbouring pages** (``neighbour_page``): the pages the product's own retrieval (the
  hybrid search over the pack's ``kb/``) ranks highest for the turn outside its page cluster
  (near copies of the answering page are not negatives), their closest window each
  (``NEIGHBOURS`` pages): on-topic pages that do not answer.

A turn with a conversation before it is also asked as the product phrases a follow-up
(``tasks.followups.resolve_follow_up``: the message and the subject terms it leans on), for
its positives and its closest negatives. Turns whose evidence no window holds (a heading or a
few words: "Apply Online") give no pairs and are counted.

Runs in the product's environment (it searches the pack with the product's retriever) and
writes JSON lines that ``training/cross_encoder.py --pack-pairs`` reads:

    python -m training.pack_pairs --out /tmp/pack-pairs.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from config.settings import load_settings
from config.telemetry import apply_telemetry_policy
from storage.kb.ingest import ingest_paths
from storage.kb.knowledge_base import KnowledgeBase
from storage.retrieval.request import RetrievalRequest
from storage.retrieval.retriever import QdrantRetriever
from tasks.answerability import closest_tokens
from tasks.evidence import EvidenceScorer
from tasks.followups import resolve_follow_up
from training.dialogue_pack import PACK, SEED, PackTurn, question_turns, words
from training.support_pairs import Page, load_pages

POSITIVES = 2
SAME_PAGE = 3
NEIGHBOURS = 3
SEARCH_DEPTH = 10
UNIT_SHARE = 0.6  # a unit is evidence when this share of its words is the evidence's ...
EVIDENCE_SHARE = 0.6  # ... or when it holds this share of a short evidence's words


@dataclass(frozen=True)
class PackPair:
    question: str
    window: str
    label: int
    group: str  # the turn's key: figures are per turn
    kind: str  # evidence | same_page | neighbour_page
    fold: int


def evidence_units(page: Page, evidence: Sequence[str]) -> set[int]:
    """The units of ``page`` that hold the evidence: most of their words are the evidence's,
    or they hold most of a short evidence string's words.

    >>> from tasks.passage_text import split_units
    >>> from tasks.answerability_model import windows
    >>> units = tuple(split_units("Benefits\\nYou may get more. Your spouse may too."))
    >>> page = Page("p", "P", units, tuple(windows(units, "P")))
    >>> sorted(evidence_units(page, ["you may get more."]))
    [1]
    """
    wanted = Counter(w for text in evidence for w in words(text))
    held: set[int] = set()
    for index, unit in enumerate(page.units):
        said = Counter(words(unit.text))
        common = sum((said & wanted).values())
        if not said or not common:
            continue
        if (common / sum(said.values()) >= UNIT_SHARE and sum(said.values()) >= 2) or any(
            sum((said & Counter(words(text))).values()) >= EVIDENCE_SHARE * len(words(text))
            for text in evidence
            if words(text)
        ):
            held.add(index)
    return held


class WindowReader:
    """MaxSim of a question's word pieces against each window (token vectors cached)."""

    def __init__(self, scorer: EvidenceScorer, pages: Sequence[Page]) -> None:
        self.scorer = scorer
        texts = [w.text for page in pages for w in page.spans]
        self.vectors = dict(zip(texts, scorer.token_vectors(texts), strict=True))

    def closeness(self, question: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        query = self.scorer.token_vectors([question])[0]
        rows = closest_tokens(query, [self.vectors[t] for t in texts])
        return [float(r.mean()) if r.size else 0.0 for r in rows]


def turn_pairs(
    turn: PackTurn,
    pages: dict[str, Page],
    retrieved: Sequence[str],
    reader: WindowReader,
    rng: random.Random,
) -> list[PackPair]:
    """The pairs of one turn (none when no window holds its evidence)."""
    positives: list[tuple[int, str]] = []
    for source in turn.gold:
        page = pages.get(source)
        if page is None:
            continue
        held = evidence_units(page, turn.evidence)
        for span in page.spans:
            count = len(held & set(range(span.first, span.last)))
            if count:
                positives.append((count, span.text))
    if not positives:
        return []
    positives.sort(key=lambda p: -p[0])
    chosen = list(dict.fromkeys(text for _, text in positives))[:POSITIVES]
    own = pages[turn.page] if turn.page in pages else pages[turn.gold[0]]
    held = evidence_units(own, turn.evidence)
    others = [s.text for s in own.spans if not held & set(range(s.first, s.last))]
    close = reader.closeness(turn.text, others)
    ranked = [others[i] for i in np.argsort(close)[::-1]]
    same = ranked[:SAME_PAGE] + (rng.sample(ranked[SAME_PAGE:], 1) if ranked[SAME_PAGE:] else [])
    neighbours: list[str] = []
    for source in retrieved:
        if source in turn.leave_out or source in turn.gold or source not in pages:
            continue
        if len(neighbours) >= NEIGHBOURS:
            continue
        spans = [s.text for s in pages[source].spans]
        neighbours.append(spans[int(np.argmax(reader.closeness(turn.text, spans)))])
    asks = [turn.text]
    if turn.history:
        follow_up = resolve_follow_up(turn.text, list(turn.history), [])
        if follow_up is not None and follow_up.query != turn.text:
            asks.append(follow_up.query)
    pairs: list[PackPair] = []
    for number, ask in enumerate(asks):
        # the follow-up's phrasing: its positives and the closest negative of each kind
        keep = slice(None) if number == 0 else slice(0, 1)
        for text in chosen:
            pairs.append(PackPair(ask, text, 1, turn.key, "evidence", turn.fold))
        for kind, texts in (("same_page", same), ("neighbour_page", neighbours)):
            for text in texts[keep]:
                pairs.append(PackPair(ask, text, 0, turn.key, kind, turn.fold))
    return pairs


def build(data_dir: Path, seed: int = SEED) -> tuple[list[PackPair], dict[str, int]]:
    """Every turn's pairs, searching the pack's pages with the product's retriever."""
    settings = load_settings()
    kb = KnowledgeBase.open(settings, data_dir)
    try:
        ingest_paths(kb, [PACK / "kb"], prune=True)
        scorer = EvidenceScorer(kb.encoders, settings.evidence, kb.term_statistics)
        retriever = QdrantRetriever(kb=kb)
        pages = {p.source_id: p for p in load_pages((PACK / "kb",))}
        reader = WindowReader(scorer, list(pages.values()))
        rng = random.Random(seed)
        pairs: list[PackPair] = []
        counts: Counter[str] = Counter()
        for turn in question_turns():
            found = retriever.search_queries(RetrievalRequest([turn.text], top_k=SEARCH_DEPTH))
            retrieved = list(dict.fromkeys(r.metadata["source_id"] for r in found.results))
            made = turn_pairs(turn, pages, retrieved, reader, rng)
            counts["turns with pairs" if made else "turns without an evidence window"] += 1
            pairs += made
        counts.update(f"pairs: {p.kind}" for p in pairs)
        return pairs, dict(counts)
    finally:
        kb.close()


def load_pairs(path: Path) -> list[PackPair]:
    """The pairs written by ``main``."""
    with path.open(encoding="utf-8") as lines:
        return [PackPair(**json.loads(line)) for line in lines if line.strip()]


def main() -> None:
    apply_telemetry_policy()
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path("/tmp/pack-pairs.jsonl"))
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/supportcrew-pack"))
    args = parser.parse_args()
    pairs, counts = build(args.data_dir)
    with args.out.open("w", encoding="utf-8") as out:
        for pair in pairs:
            out.write(json.dumps(asdict(pair)) + "\n")
    print(json.dumps(counts, indent=1))


if __name__ == "__main__":
    main()
