"""The doc2dial training pack read as the answer decision's training data: real customer
turns in their conversations, with the page spans the agent's reply was grounded on.

``../shared/datasets/doc2dial-support-train`` (283 dialogues, 1,719 grounded customer turns,
158 pages; training data only: no evaluation dialogue or page is in it). What this module
makes of it, the same way for every script of ``training/``:

* **question turns** (``is_question``): a grounded customer turn is kept as a question when
  the agent's reply (every agent turn up to the next customer turn) asks nothing back (no
  "?"), the turn does not open with a yes/no word ("ok yes", "no, not me", "sure, ..."), and
  it has three words or more. It keeps 1,031 of the 1,719 turns;
* each turn with the **conversation before it** (``history``: the earlier customer turns,
  each with the agent's reply and the page the dialogue is about as what it cited: the
  conversation the assistant has at that point when it answered from the right page);
* **folds grouped by page** (``folds``): pages that share a turn's evidence (``doc_ids``,
  near-identical pages) or a dialogue form one group; groups are dealt to ``FOLDS`` folds by
  a fixed seed, so no page is in two folds and a fold's turns are about pages no other fold
  holds;
* **unanswerable twins**: the same turn asked of ``kb/`` without every page in its
  ``doc_ids`` (``PackTurn.gold``); the neighbouring pages of the same programme stay, so these
  are on-topic pages that do not answer.

Usage::

    turns = question_turns()
    turns[0].text, turns[0].history, turns[0].gold, turns[0].fold
    python -m training.dialogue_pack            # writes training/DOC2DIAL_PACK.md (the data card)
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from evaluation.reporting import DATASETS, ROOT
from tasks.schemas import HistoryTurn

PACK = DATASETS / "doc2dial-support-train"
CARD = ROOT / "training" / "DOC2DIAL_PACK.md"
FOLDS = 5
SEED = 13
MIN_WORDS = 3
NEAR_COPIES = 3  # at most this many pages holding a turn's evidence are one page's copies
# a turn that opens with one of these answers what the agent asked ("ok yes", "Not
# applicable to me, no"); the agent's next reply grounds on the page, but the turn asks nothing
YES_NO = frozenset({"yes", "no", "ok", "okay", "yeah", "yep", "nope", "sure", "nah", "not"})
_WORD = re.compile(r"[a-z0-9']+")


@dataclass(frozen=True)
class PackTurn:
    """One customer question of the pack, in its conversation."""

    dialogue: str  # "t001"
    turn: int  # its number in the dialogue
    text: str
    history: tuple[HistoryTurn, ...]  # the conversation before it, oldest first
    evidence: tuple[str, ...]  # the page text the agent's reply was grounded on
    gold: tuple[str, ...]  # every page that holds the evidence (``doc_ids``)
    page: str  # the page the dialogue is about
    domain: str
    fold: int

    @property
    def key(self) -> str:
        return f"{self.dialogue}/{self.turn}"

    @property
    def first(self) -> bool:
        """Whether this is the conversation's first question (no customer turn before it)."""
        return not self.history


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def is_question(text: str, reply: str) -> bool:
    """The rule that keeps a grounded customer turn as a question (see the module's doc).

    >>> is_question("What if I served in the military?", "You may be eligible.")
    True
    >>> is_question("ok yes", "Our mission is to deliver services.")
    False
    >>> is_question("How do I apply?", "Are you a veteran?")
    False
    """
    said = words(text)
    return "?" not in reply and len(said) >= MIN_WORDS and said[0] not in YES_NO


@cache
def dialogues(pack: Path = PACK) -> tuple[dict, ...]:
    with (pack / "dialogues.jsonl").open(encoding="utf-8") as lines:
        return tuple(json.loads(line) for line in lines if line.strip())


def _reply(turns: list[dict], index: int) -> str:
    """The agent's reply to turn ``index``: every agent turn up to the next customer turn."""
    reply = []
    for later in turns[index + 1 :]:
        if later["role"] == "user":
            break
        reply.append(later["text"])
    return " ".join(reply)


def page_groups(pack: Path = PACK) -> dict[str, str]:
    """Page -> its group (union-find): the pages that hold a question turn's evidence
    together with its dialogue's page, when they are at most ``NEAR_COPIES`` (near-identical
    pages); evidence that many pages hold ("Apply Online", "call TTY : 711.") joins none."""
    parent: dict[str, str] = {}

    def root(page: str) -> str:
        parent.setdefault(page, page)
        while parent[page] != page:
            parent[page] = parent[parent[page]]
            page = parent[page]
        return page

    for page in (p.stem for p in (pack / "kb").glob("*.md")):
        root(page)
    for dialogue in dialogues(pack):
        root(dialogue["doc_id"])
        for index in _questions(dialogue):
            gold = dialogue["turns"][index]["doc_ids"]
            for page in gold if len(gold) <= NEAR_COPIES else ():
                parent[root(page)] = root(dialogue["doc_id"])
    return {page: root(page) for page in parent}


def folds(pack: Path = PACK, count: int = FOLDS, seed: int = SEED) -> dict[str, int]:
    """Page -> fold: groups shuffled by ``seed`` and dealt, largest first, to the fold with
    the fewest question turns so far (folds of about equal size)."""
    groups = page_groups(pack)
    members: dict[str, list[str]] = {}
    for page, group in groups.items():
        members.setdefault(group, []).append(page)
    weight = Counter(groups[d["doc_id"]] for d in dialogues(pack) for _ in _questions(d))
    order = sorted(members)
    random.Random(seed).shuffle(order)
    order.sort(key=lambda g: -weight[g])  # stable: ties keep the seeded order
    load = [0] * count
    fold_of: dict[str, int] = {}
    for group in order:
        target = min(range(count), key=lambda f: load[f])
        load[target] += weight[group]
        for page in members[group]:
            fold_of[page] = target
    return fold_of


def _questions(dialogue: dict) -> list[int]:
    turns = dialogue["turns"]
    return [
        i
        for i, t in enumerate(turns)
        if t["role"] == "user" and t.get("evidence") and is_question(t["text"], _reply(turns, i))
    ]


@cache
def question_turns(pack: Path = PACK) -> tuple[PackTurn, ...]:
    """Every question turn of the pack with its conversation, evidence, gold pages and fold."""
    fold_of = folds(pack)
    kept: list[PackTurn] = []
    for dialogue in dialogues(pack):
        turns = dialogue["turns"]
        questions = set(_questions(dialogue))
        history: list[HistoryTurn] = []
        for index, turn in enumerate(turns):
            if turn["role"] != "user":
                continue
            text = " ".join(turn["text"].split())
            if index in questions:
                kept.append(
                    PackTurn(
                        dialogue=dialogue["id"],
                        turn=turn["turn"],
                        text=text,
                        history=tuple(history),
                        evidence=tuple(turn["evidence"]),
                        gold=tuple(turn["doc_ids"]),
                        page=dialogue["doc_id"],
                        domain=dialogue["domain"],
                        fold=fold_of[dialogue["doc_id"]],
                    )
                )
            grounded = bool(turn.get("evidence"))
            history.append(
                HistoryTurn(
                    user=text,
                    answer=" ".join(_reply(turns, index).split()),
                    sources=[dialogue["doc_id"]] if grounded else [],
                )
            )
    return tuple(kept)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def card_lines(pack: Path = PACK) -> list[str]:
    """The data card: the rule, the counts and the hashes."""
    turns = question_turns(pack)
    grounded = sum(
        1 for d in dialogues(pack) for t in d["turns"] if t["role"] == "user" and t.get("evidence")
    )
    fold_of = folds(pack)
    per_fold = Counter(t.fold for t in turns)
    pages_per_fold = Counter(fold_of.values())
    first = sum(t.first for t in turns)
    several = sum(len(t.gold) > 1 for t in turns)
    generic = sum(len(t.gold) > NEAR_COPIES for t in turns)
    return [
        "# Data card: the doc2dial training pack as the answer decision's training data",
        "",
        "Written by `python -m training.dialogue_pack` (`training/dialogue_pack.py`); do not edit.",
        "",
        f"- Source: `{pack.relative_to(DATASETS.parent.parent)}` (doc2dial v1.0.1, IBM, CC BY 3.0); "
        f"`dialogues.jsonl` sha256 `{_sha256(pack / 'dialogues.jsonl')}`, "
        f"{len(list((pack / 'kb').glob('*.md')))} pages in `kb/`.",
        f"- Rule (`is_question`): a grounded customer turn is a question when the agent's reply "
        f"(every agent turn up to the next customer turn) has no '?', the turn's first word is "
        f"not one of {', '.join(sorted(YES_NO))}, and it has {MIN_WORDS} words or more.",
        f"- Kept: {len(turns)} of {grounded} grounded customer turns ({first} first questions of "
        f"their conversation, {len(turns) - first} later turns; {several} with more than one "
        "page holding the evidence).",
        "- Context: each turn carries the conversation before it (the earlier customer turns with "
        "the agent's reply, citing the dialogue's page when the turn was grounded).",
        "- Unanswerable twins: each turn asked of `kb/` without every page in its `doc_ids`.",
        f"- Folds: {FOLDS}, grouped by page (a dialogue's page and the pages holding a question "
        f"turn's evidence, when at most {NEAR_COPIES}, form one group; no page in two folds; "
        f"{generic} turns whose evidence more pages hold join no group), seed {SEED}. "
        "Question turns per fold: "
        + ", ".join(f"{f}: {per_fold[f]}" for f in range(FOLDS))
        + "; pages per fold: "
        + ", ".join(f"{f}: {pages_per_fold[f]}" for f in range(FOLDS))
        + ".",
        "- Turns by domain: "
        + ", ".join(f"{d} {n}" for d, n in sorted(Counter(t.domain for t in turns).items()))
        + ".",
        "- Keys of the kept turns (dialogue/turn), sha256: "
        f"`{hashlib.sha256(' '.join(t.key for t in turns).encode()).hexdigest()}`.",
        "",
    ]


def main() -> None:
    lines = card_lines()
    CARD.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
