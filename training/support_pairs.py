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
  negative, and a code of the same family that no page documents is negative everywhere;
* a problem statement that names a code ("The nightly job on build-7 failed with E-429
  again."), for the codes the pages explain and for invented families: each code window is
  copied with its codes renamed to a family no page uses, so what decides is whether the
  window explains *the code named*, not which codes the training pages happen to hold;
* follow-ups read in their conversation (``in_conversation``: the previous message, then
  the follow-up): "Tell me about <title>. And what about <heading>?" is
  answered by the section, not by the overview the previous message asked for;
* a share of every ask carries what customers add and the product no longer strips: their
  own references (an order id, an email address) and a typo;
* with ``embed`` (the retriever's sentence embedding), every ask also gets the windows of
  *other* pages that its search would rank highest as negatives (``retrieved_page``): a page
  that mentions the subject in passing is what the turn's search brings back beside the page
  that answers, and what the decision must not answer from.

Pages are split by a fixed seed into training and held-out pages (``HELD_OUT_SHARE``).

Usage::

    pairs = support_pairs(load_pages(), seed=13, embed=my_sentence_embedding)
    pairs["train"], pairs["held_out"]            # lists of Pair
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evaluation.reporting import DATASETS, ROOT
from storage.kb.documents import discover, read_file
from storage.kb.fact_kinds import ERROR_CODE
from tasks.answerability_model import Window, windows
from tasks.passage_text import Unit, split_units
from training.answerability_data import Pair, wrap

PAGE_FOLDERS = (
    DATASETS / "doc2dial-support-dev" / "kb",
    ROOT / "examples" / "kb",
)
HELD_OUT_SHARE = 0.2
WRAP_SHARE = 0.3
RETRIEVED_NEGATIVES = 2  # per ask: the other pages' windows its search ranks highest
Embed = Callable[[Sequence[str]], np.ndarray]  # texts -> unit-length rows
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
PROBLEM_STATEMENTS = (
    "My {thing} failed with {code}.",
    "We got {code} again this morning.",
    "{person} can't get it to work, she gets {code}.",
    "The nightly job on build-server-{n} failed with error {code} again.",
    "Getting {code} since yesterday, what now?",
    "Hi, it stopped with {code}. Can you help me with that?",
    "I keep seeing {code} when I try.",
    "Our {thing} shows {code}",
)
THINGS = ("card payment", "sync", "sign-in", "upload", "export", "import", "renewal", "login")
PEOPLE = ("Marta from accounting", "Our admin", "A colleague", "My manager")
FOLLOW_UPS = (
    "And what about {heading}?",
    "what about {heading}",
    "And {heading}?",
    "How about {heading}?",
)
REFERENCES = (
    " (order ORD-{n5})",
    " My account is ana{n2}@example.com.",
    " It's for order number {n5}.",
    " Ref INV-2026-{n6}.",
)
CONTEXT_WORDS = 24  # of the previous message, before a follow-up
NOISE_SHARE = 0.15  # of asks with a reference added, and of asks with a typo
INVENTED_FAMILIES = 20  # renamed copies of each code window
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


def in_conversation(message: str, previous: str) -> str:
    """A follow-up as its conversation reads: after the previous message (its last
    ``CONTEXT_WORDS`` words: the model reads the start of what it is given).

    >>> in_conversation("And to PayPal?", "How long does a refund take?")
    'How long does a refund take? And to PayPal?'
    """
    return " ".join([*previous.split()[-CONTEXT_WORDS:], *message.split()])


def noisy(text: str, rng: random.Random) -> str:
    """The ask as some customers send it: with their own reference, with a typo."""
    if rng.random() < NOISE_SHARE:
        numbers = {f"n{k}": "".join(rng.choice("0123456789") for _ in range(k)) for k in (2, 5, 6)}
        text = text.rstrip() + rng.choice(REFERENCES).format(**numbers)
    if rng.random() < NOISE_SHARE:
        words = text.split(" ")
        long = [i for i, w in enumerate(words) if w.isalpha() and w.islower() and len(w) >= 6]
        if long:
            i = rng.choice(long)
            w = words[i]
            j = rng.randrange(1, len(w) - 2)
            words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2 :] if rng.random() < 0.5 else w[:j] + w[j + 1 :]
            text = " ".join(words)
    return text


def explains(text: str, code: str) -> bool:
    """Whether a window explains a code ("PAY-101: the card was declined", "Error SSO-104")
    rather than naming a form ("Bring form MV-82")."""
    code = re.escape(code)
    return bool(re.search(rf"\b{code}`?\s*:|\berror(?: code)?\s+`?{code}\b", text, re.I))


def _statement(code: str, rng: random.Random) -> str:
    return rng.choice(PROBLEM_STATEMENTS + CODE_ASKS).format(
        code=code, thing=rng.choice(THINGS), person=rng.choice(PEOPLE), n=rng.randrange(2, 40)
    )


def _renamed(text: str, family: str, numbers: dict[str, str]) -> str:
    for code, number in numbers.items():
        text = re.sub(rf"\b{re.escape(code)}\b", f"{family}-{number}", text)
    return text


def _invented_family(rng: random.Random, taken: set[str]) -> str:
    while True:
        family = "".join(rng.choice("ABCDEFGHKLMNPRSTVWXZ") for _ in range(rng.randint(1, 4)))
        if family not in taken:
            return family


def _code_pairs(pages: list[Page], rng: random.Random, conversational: bool) -> list[Pair]:
    """Codes the pages explain, their siblings, codes of a family no page documents; with
    ``conversational``, also problem statements and renamed copies of each code window
    (invented families)."""
    holding: dict[str, list[Window]] = {}
    for page in pages:
        for span in page.spans:
            for code in ERROR_CODE.findall(span.text):
                if explains(span.text, code) or not conversational:
                    holding.setdefault(code, []).append(span)
    families = {c.rsplit("-", 1)[0] for c in holding}
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
        asks = [rng.choice(CODE_ASKS).format(code=code)]
        if conversational:
            asks = list(dict.fromkeys([*asks, _statement(code, rng)]))
        for ask in asks:
            pairs.append(Pair(ask, spans[0].text, 1, f"code:{code}", "code"))
            if siblings:
                pairs.append(Pair(ask, rng.choice(siblings).text, 0, f"code:{code}", "sibling_code"))
        unknown = f"{prefix}-{int(number) + 7:0{len(number)}d}"
        if unknown not in holding:
            ask = (
                _statement(unknown, rng)
                if conversational
                else rng.choice(CODE_ASKS).format(code=unknown)
            )
            pairs += [
                Pair(ask, s.text, 0, f"code:{unknown}", "undocumented_code")
                for s in spans[:1] + siblings[:1]
            ]
        for _ in range(INVENTED_FAMILIES if conversational else 0):
            family = _invented_family(rng, families)
            named = sorted(set(ERROR_CODE.findall(spans[0].text)))
            numbers = {c: f"{rng.randrange(10, 999):03d}" for c in named}
            window = _renamed(spans[0].text, family, numbers)
            group = f"code:{family}-{numbers[code]}"
            pairs.append(
                Pair(_statement(f"{family}-{numbers[code]}", rng), window, 1, group, "invented_code")
            )
            unused = next(
                f"{n:03d}"
                for n in range(rng.randrange(10, 900), 1000)
                if f"{n:03d}" not in numbers.values()
            )
            pairs.append(
                Pair(
                    _statement(f"{family}-{unused}", rng),
                    window,
                    0,
                    group + "?",
                    "invented_undocumented",
                )
            )
    return pairs


def follow_up_pairs(page: Page, rng: random.Random) -> list[Pair]:
    """Follow-ups of a page ask, read the way the product reads them: the previous message,
    then the follow-up (a section's heading, an FAQ question)."""
    previous = rng.choice(PAGE_ASKS).format(topic=topic_of(page.title))
    pairs = []
    for number, (ask, positives, same_page) in enumerate(_asks(page, rng)):
        if not same_page:
            continue
        heading = next((u.text for u in page.units if u.kind == "heading" and u.text.lower() in ask), "")
        follow = rng.choice(FOLLOW_UPS).format(heading=heading.lower()) if heading else ask
        reading = noisy(in_conversation(follow, previous), rng)
        group = f"{page.source_id}#follow{number}"
        pairs += [Pair(reading, w.text, 1, group, "follow_up") for w in positives]
        overview = page.spans[0]
        if not any(overview.first < p.last and p.first < overview.last for p in positives):
            pairs.append(Pair(reading, overview.text, 0, group, "follow_up_overview"))
    return pairs


def page_pairs(
    page: Page, pages: list[Page], rng: random.Random, conversational: bool = False
) -> list[Pair]:
    """The positive and hard negative pairs of one page's asks."""
    pairs = []
    for number, (ask, positives, same_page) in enumerate(_asks(page, rng)):
        group = f"{page.source_id}#{number}"
        text = wrap(ask, topic_of(page.title), rng) if rng.random() < WRAP_SHARE else ask
        text = noisy(text, rng) if conversational else text
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


def retrieved_negatives(asks: list[Pair], pages: list[Page], embed: Embed) -> list[Pair]:
    """Per ask (one pair of each group stands for it), the ``RETRIEVED_NEGATIVES`` windows of
    other pages closest to it by the retriever's embedding, as negatives."""
    spans = [(page.source_id, span.text) for page in pages for span in page.spans]
    if not asks or not spans:
        return []
    window_rows = embed([text for _, text in spans])
    ask_rows = embed([pair.question for pair in asks])
    negatives = []
    for pair, scores in zip(asks, ask_rows @ window_rows.T, strict=True):
        own = pair.group.rsplit("#", 1)[0]
        kept = 0
        for index in np.argsort(-scores):
            source, text = spans[index]
            if source == own or text == pair.window:
                continue
            negatives.append(Pair(pair.question, text, 0, pair.group, "retrieved_page"))
            kept += 1
            if kept == RETRIEVED_NEGATIVES:
                break
    return negatives


def _asked(pairs: list[Pair]) -> list[Pair]:
    """One positive pair per page-ask group (codes have no page of their own)."""
    seen: dict[str, Pair] = {}
    for pair in pairs:
        if pair.label == 1 and "#" in pair.group:
            seen.setdefault(pair.group, pair)
    return list(seen.values())


def support_pairs(
    pages: list[Page], seed: int, embed: Embed | None = None, conversational: bool = False
) -> dict[str, list[Pair]]:
    """Pairs of the training pages and of the held-out pages (with ``embed``, the retrieved
    negatives too: training asks from the training pages, held-out asks from all pages)."""
    rng = random.Random(seed)
    order = sorted(pages, key=lambda p: p.source_id)
    rng.shuffle(order)
    cut = int(len(order) * HELD_OUT_SHARE)
    held = {p.source_id for p in order[:cut]}
    split: dict[str, list[Pair]] = {"train": [], "held_out": []}
    for page in sorted(pages, key=lambda p: p.source_id):
        part = "held_out" if page.source_id in held else "train"
        split[part] += page_pairs(page, pages, rng, conversational)
        if conversational:
            split[part] += follow_up_pairs(page, rng)
    training = [p for p in pages if p.source_id not in held]
    if embed is not None:
        split["train"] += retrieved_negatives(_asked(split["train"]), training, embed)
        split["held_out"] += retrieved_negatives(_asked(split["held_out"]), pages, embed)
    split["train"] += _code_pairs(training, rng, conversational)
    split["held_out"] += _code_pairs([p for p in pages if p.source_id in held], rng, conversational)
    return split


def main() -> None:
    """Print the pairs' counts by kind and a sample (``python -m training.support_pairs``)."""
    found = support_pairs(load_pages(), 13)
    for name, pairs in found.items():
        kinds: dict[str, int] = {}
        for pair in pairs:
            kinds[pair.kind] = kinds.get(pair.kind, 0) + 1
        print(name, len(pairs), kinds)
    for pair in random.Random(1).sample(found["train"], 8):
        print(pair.label, pair.kind, "|", pair.question, "|", pair.window[:120])


if __name__ == "__main__":
    main()
