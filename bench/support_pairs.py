"""Support-shaped training pairs for the answer decision, written from support pages.

SQuAD teaches what answers a factual question; customers also ask *topical* requests ("tell me
about registering a moped", "how do I apply?"), name a section of a page, name an error code
(maybe one no page documents), and wrap all of it in greetings. These pairs are generated from
the pages of the doc2dial **dev** pack and ``examples/kb`` (never from the test pack), cut into
the windows the product reads (``tasks.answerability_model.windows``):

* an FAQ question of a page: the window of its answer is positive; the best-overlapping window of
  another section of the page and of the closest other page are negative;
* a section heading, asked as a request ("What does it say about <heading> for <title>?"):
  the section's first window is positive; the same ask against the closest other page is
  negative (a similarly named programme is not the one asked about);
* the page itself ("Tell me about <title>", "How do I <title>?"): the page's overview window
  is positive, the closest other page's overview negative;
* an error code: the window that explains it is positive, a window explaining a sibling code
  negative, and a code of the same family that no page documents is negative everywhere.

Pages are split by a fixed seed into training and held-out pages (``HELD_OUT_SHARE``).

Usage::

    pairs = support_pairs(load_pages(), seed=13)
    pairs["train"], pairs["held_out"]            # lists of Pair
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

from answerability_data import Pair, wrap

from storage.kb.documents import discover, read_file
from storage.kb.fact_kinds import ERROR_CODE
from tasks.answerability_model import Window, windows
from tasks.passage_text import Unit, split_units

ROOT = Path(__file__).resolve().parent.parent
PAGE_FOLDERS = (
    ROOT.parent / "shared" / "datasets" / "doc2dial-support-dev" / "kb",
    ROOT / "examples" / "kb",
)
HELD_OUT_SHARE = 0.2
WRAP_SHARE = 0.3
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    {
        "a",
        "an",
        "the",
        "of",
        "to",
        "for",
        "and",
        "or",
        "in",
        "on",
        "at",
        "by",
        "with",
        "is",
        "are",
        "do",
        "does",
        "i",
        "my",
        "me",
        "you",
        "your",
        "what",
        "how",
        "can",
        "it",
        "this",
        "that",
        "be",
        "about",
    }
)
SECTION_ASKS = (
    "What does it say about {heading} for {topic}?",
    "Tell me about {heading} ({topic})",
    "I have a question about {heading} for {topic}.",
    "{heading}? I mean for {topic}",
    "Can you explain {heading} regarding {topic}?",
)
PAGE_ASKS = (
    "Tell me about {topic}.",
    "I'd like to know more about {topic}",
    "What is {topic}?",
    "Can you give me information on {topic}?",
    "I need help with {topic}.",
)
CODE_ASKS = (
    "What does {code} mean?",
    "I keep getting {code}, what should I do?",
    "error {code} when I try again",
    "What is that error code ({code})?",
    "Why do I see {code}?",
)


@dataclass(frozen=True)
class Page:
    source_id: str
    title: str
    units: tuple[Unit, ...]
    spans: tuple[Window, ...]


def load_pages(folders: tuple[Path, ...] = PAGE_FOLDERS) -> list[Page]:
    """Every page of ``folders``, cut into the windows the product reads."""
    pages = []
    for path, root in discover([f for f in folders if f.exists()]):
        for doc in read_file(path, root):
            units = tuple(split_units(doc.text))
            spans = tuple(windows(units, doc.title))
            if spans:
                pages.append(Page(doc.source_id, doc.title, units, spans))
    return pages


def words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in _STOP)


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def _closest_page(page: Page, pages: list[Page], text: str) -> Page | None:
    """The other page whose title and text read most like ``text`` and the page's title."""
    asked = words(text) | words(page.title)
    others = [p for p in pages if p.source_id != page.source_id]
    return max(
        others, key=lambda p: overlap(asked, words(p.title + " " + p.spans[0].text)), default=None
    )


def _best_window(spans: list[Window], text: str) -> Window | None:
    asked = words(text)
    return max(spans, key=lambda w: overlap(asked, words(w.text)), default=None)


def _section_of(units: tuple[Unit, ...], index: int) -> int:
    """The index of the heading a unit stands under (-1: none)."""
    return max((i for i in range(index + 1) if units[i].kind == "heading"), default=-1)


def topic_of(title: str) -> str:
    """A page title as a customer names the subject ("Apply For Benefits | SSA" -> the first part)."""
    return title.split(" | ")[0].strip()


def _asks(page: Page, rng: random.Random) -> list[tuple[str, list[Window], bool]]:
    """(ask, positive windows, same-page negatives allowed) of one page."""
    topic = topic_of(page.title)
    asks: list[tuple[str, list[Window], bool]] = []
    starting = {w.first: w for w in page.spans}
    for index, unit in enumerate(page.units):
        if unit.kind == "question" and index + 1 in starting:
            asks.append(
                (
                    unit.text,
                    [starting[index + 1], *([starting[index]] if index in starting else [])],
                    True,
                )
            )
        elif unit.kind == "heading" and overlap(words(unit.text), words(topic)) < 0.7:
            first = [
                w for w in page.spans if w.first > index and _section_of(page.units, w.first) == index
            ][:1]
            if first:
                ask = rng.choice(SECTION_ASKS).format(heading=unit.text.lower(), topic=topic)
                asks.append((ask, first, True))
    asks.append((rng.choice(PAGE_ASKS).format(topic=topic), [page.spans[0]], False))
    return asks


def _code_pairs(pages: list[Page], rng: random.Random) -> list[Pair]:
    """Codes the pages explain, their siblings, and codes of a family no page documents."""
    holding: dict[str, list[Window]] = {}
    for page in pages:
        for span in page.spans:
            for code in ERROR_CODE.findall(span.text):
                holding.setdefault(code, []).append(span)
    pairs = []
    for code, spans in sorted(holding.items()):
        prefix, number = code.rsplit("-", 1)
        siblings = [
            s
            for c, found in holding.items()
            if c != code and c.startswith(prefix + "-")
            for s in found
            if code not in s.text
        ]
        ask = rng.choice(CODE_ASKS).format(code=code)
        pairs.append(Pair(ask, spans[0].text, 1, f"code:{code}", "code"))
        if siblings:
            pairs.append(Pair(ask, rng.choice(siblings).text, 0, f"code:{code}", "sibling_code"))
        unknown = f"{prefix}-{int(number) + 7:0{len(number)}d}"
        if unknown not in holding:
            ask = rng.choice(CODE_ASKS).format(code=unknown)
            pairs += [
                Pair(ask, s.text, 0, f"code:{unknown}", "undocumented_code")
                for s in spans[:1] + siblings[:1]
            ]
    return pairs


def page_pairs(page: Page, pages: list[Page], rng: random.Random) -> list[Pair]:
    """The positive and hard negative pairs of one page's asks."""
    pairs = []
    for number, (ask, positives, same_page) in enumerate(_asks(page, rng)):
        group = f"{page.source_id}#{number}"
        text = wrap(ask, topic_of(page.title), rng) if rng.random() < WRAP_SHARE else ask
        kind = "section" if same_page else "overview"
        pairs += [Pair(text, w.text, 1, group, kind) for w in positives]
        if same_page:
            taken = {(w.first, w.last) for w in positives}
            rest = [
                w
                for w in page.spans
                if (w.first, w.last) not in taken
                and not any(w.first < p.last and p.first < w.last for p in positives)
            ]
            hard = _best_window(rest, ask)
            if hard is not None:
                pairs.append(Pair(text, hard.text, 0, group, "other_section"))
        neighbour = _closest_page(page, pages, ask)
        if neighbour is not None:
            hard = _best_window(list(neighbour.spans), ask) if same_page else neighbour.spans[0]
            if hard is not None:
                pairs.append(Pair(text, hard.text, 0, group, "neighbour_page"))
    return pairs


def support_pairs(pages: list[Page], seed: int) -> dict[str, list[Pair]]:
    """Pairs of the training pages and of the held-out pages."""
    rng = random.Random(seed)
    order = sorted(pages, key=lambda p: p.source_id)
    rng.shuffle(order)
    cut = int(len(order) * HELD_OUT_SHARE)
    held = {p.source_id for p in order[:cut]}
    split: dict[str, list[Pair]] = {"train": [], "held_out": []}
    for page in sorted(pages, key=lambda p: p.source_id):
        split["held_out" if page.source_id in held else "train"] += page_pairs(page, pages, rng)
    split["train"] += _code_pairs([p for p in pages if p.source_id not in held], rng)
    split["held_out"] += _code_pairs([p for p in pages if p.source_id in held], rng)
    return split


if __name__ == "__main__":
    found = support_pairs(load_pages(), 13)
    for name, pairs in found.items():
        kinds: dict[str, int] = {}
        for pair in pairs:
            kinds[pair.kind] = kinds.get(pair.kind, 0) + 1
        print(name, len(pairs), kinds)
    for pair in random.Random(1).sample(found["train"], 8):
        print(pair.label, pair.kind, "|", pair.question, "|", pair.window[:120])
