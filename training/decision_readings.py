"""The answer decision's fitting data: real turns, asked of the product, their readings kept
by content hash so that a refit after a feature change takes minutes.

What is asked (``fitting_asks``):

* every question turn of the doc2dial training pack (``training/dialogue_pack.py``) in its
  conversation, over the pack's ``kb/``, and its **clean unanswerable twin**: the same turn
  with its whole page cluster out of what retrieval returns (``WithoutPages``);
* the written answer sets over examples/kb (``WRITTEN``: near-miss, support-problems,
  support-requests), each question as a first turn under the set's slots, and each
  answerable one again without its pages, kept as a twin only when no other page holds one
  of its evidence sentences.

No message quoted in an issue is a fitting row (examples/regression/issue_cases.yaml): those
are the product's regression tests.

What is kept (``record``), per ask, in ``<cache>/turns-<kb digest>.jsonl``: what the turn's
decision was given (the phrasings, the conversation's pages, the passages), from a real
turn of the product (``agents.turn.run_turn``, CrewAI, every role on its evidence path). The
cross-encoder's probability for each (question, window) it read is kept in
``<cache>/learned-<model digest>.jsonl`` (``StoredReadings``), so reading the features again
(``tasks.decision.read_message``) reads no window twice.

    asks = fitting_asks()
    recorded = record(asks, cache=Path(".supportcrew/fit-cache"))
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

import tasks.gates
from agents.build import build_runtime
from agents.turn import run_turn
from config.settings import Settings
from evaluation.answer_sets import load_answer_set
from evaluation.reporting import ROOT
from storage.kb.ingest import ingest_paths
from storage.kb.knowledge_base import KnowledgeBase
from storage.kb.model_files import answerability_dir
from storage.lru import LruCache
from storage.retrieval.request import RetrievalRequest
from storage.retrieval.results import SearchResultList
from tasks.decision import Conversation
from tasks.evidence import EvidenceScorer
from tasks.schemas import HistoryTurn, Passage, TurnRequest
from training.dialogue_pack import FOLDS, PACK, SEED, nearest_page, question_turns

WRITTEN = tuple(
    ROOT / "examples" / "answer-sets" / name
    for name in ("near-miss", "support-problems", "support-requests")
)
ISSUE_CASES = ROOT / "examples" / "regression" / "issue_cases.yaml"
TWIN_DEPTH = 40  # a twin's search goes this much deeper, so it still gets top_k other passages
RECORDER = 1  # bump when what a recorded turn holds changes: older records are not reused
_NOT_ALNUM = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class Ask:
    """One turn to ask: its message and conversation, what answers it, and where it is held
    out. A ``twin`` is asked without its ``leave_out`` pages and answers nothing."""

    set: str  # "pack", or the written set's name
    key: str
    message: str
    history: tuple[HistoryTurn, ...]
    gold: tuple[str, ...]  # the pages that answer it (none: unanswerable)
    kb: Path
    slots: dict[str, str] = field(default_factory=dict)
    fold: int = 0
    group: str = ""  # what is held out together (the pack: the page cluster)
    opener: bool = True
    test_like: bool = False
    twin: bool = False
    leave_out: tuple[str, ...] = ()

    @property
    def answerable(self) -> bool:
        return bool(self.gold) and not self.twin

    def digest(self) -> str:
        """What the turn's readings depend on, hashed (not where it is held out)."""
        asked = {
            "message": self.message,
            "history": [h.model_dump() for h in self.history],
            "slots": self.slots,
            "hidden": sorted(self.leave_out) if self.twin else [],
            "recorder": RECORDER,
        }
        return hashlib.sha256(json.dumps(asked, sort_keys=True).encode()).hexdigest()[:24]


class Recorded(BaseModel):
    """What one asked turn's decision was given, and what the product did with it."""

    digest: str
    message: str
    phrasings: list[str]
    subject: list[str]
    passages: list[Passage]
    verdict: str
    cited: list[str]

    @property
    def conversation(self) -> Conversation:
        return Conversation(tuple(self.phrasings), tuple(self.subject))


def normalised(text: str) -> str:
    """Letters and digits, lower-cased: how a fitting row is compared to an issue's case.

    >>> normalised("Thanks, bye!") == normalised("thanks bye")
    True
    """
    return " ".join(_NOT_ALNUM.split(text.lower())).strip()


def issue_cases(path: Path = ISSUE_CASES) -> frozenset[str]:
    """The messages quoted in issues, normalised: never a fitting row."""
    cases = yaml.safe_load(path.read_text(encoding="utf-8"))["cases"]
    return frozenset(normalised(c["text"]) for c in cases)


def pack_asks() -> Iterator[Ask]:
    """Every question turn of the pack, and its twin where the twin is clean."""
    for turn in question_turns():
        ask = Ask(
            "pack",
            turn.key,
            turn.text,
            turn.history,
            turn.gold,
            PACK / "kb",
            {},
            turn.fold,
            turn.cluster,
            turn.opener,
            turn.test_like,
        )
        yield ask
        if turn.clean:
            cited = nearest_page(turn.page, turn.leave_out)
            history = tuple(
                h.model_copy(update={"sources": [cited]}) if h.sources else h for h in turn.history
            )
            yield replace(ask, history=history, twin=True, leave_out=turn.leave_out)


def _leaks(evidence: Sequence[str], pages: dict[str, str], left_out: Sequence[str]) -> bool:
    """Whether a page that stays holds an evidence sentence (whitespace aside)."""
    said = [" ".join(e.split()).lower() for e in evidence if len(e.split()) >= 6]
    return any(s in text for source, text in pages.items() if source not in left_out for s in said)


def written_asks(directory: Path) -> Iterator[Ask]:
    """A written answer set's questions as first turns, and the clean twins of the answerable
    ones; each question is its own group, dealt to a fold by its name."""
    answer_set = load_answer_set(directory)
    pages = {
        str(path.relative_to(answer_set.kb)): " ".join(path.read_text(encoding="utf-8").split()).lower()
        for path in answer_set.kb.rglob("*.md")
    }
    for question in answer_set.questions:
        group = f"{answer_set.name}/{question.id}"
        fold = int(hashlib.sha256(f"{SEED}:{group}".encode()).hexdigest(), 16) % FOLDS
        gold = tuple(question.doc_ids) if question.answerable else ()
        ask = Ask(
            answer_set.name,
            question.id,
            question.question,
            (),
            gold,
            answer_set.kb,
            dict(answer_set.slots),
            fold,
            group,
        )
        yield ask
        if gold and not _leaks(question.evidence, pages, gold):
            yield replace(ask, twin=True, leave_out=gold)


def fitting_asks(pack: bool = True, written: Sequence[Path] = WRITTEN) -> list[Ask]:
    """The pack's (with ``pack``) and the written sets' asks, issue-quoted messages left out."""
    quoted = issue_cases()
    asks = [
        *(pack_asks() if pack else ()),
        *(a for directory in written for a in written_asks(directory)),
    ]
    return [a for a in asks if normalised(a.message) not in quoted]


class WithoutPages:
    """A retriever that never returns ``pages`` (an unanswerable twin's knowledge base)."""

    def __init__(self, inner: Any, pages: Sequence[str]) -> None:
        self.inner = inner
        self.pages = frozenset(pages)

    def search_queries(self, request: RetrievalRequest) -> SearchResultList:
        """The inner search, deeper, less ``pages`` (asked only for those: nothing)."""
        asked = [p for p in request.pages if p not in self.pages]
        if request.pages and not asked:
            return SearchResultList([])
        top_k = request.top_k or self.inner.kb.settings.retrieval.top_k
        found = self.inner.search_queries(replace(request, top_k=top_k + TWIN_DEPTH, pages=asked))
        kept = [r for r in found.results if r.metadata["source_id"] not in self.pages][:top_k]
        return replace(found, results=kept)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class StoredReadings(LruCache[tuple[str, str], float]):
    """The cross-encoder's readings kept on disk, one JSON line per (question, window): a
    refit reads no window twice. The file is named by the model's digest."""

    def __init__(self, path: Path) -> None:
        super().__init__(10**9)
        self.path = path
        if path.exists():
            with path.open(encoding="utf-8") as lines:
                for line in lines:
                    question, text, value = json.loads(line)
                    self._items[(question, text)] = value

    def get_many(
        self,
        keys: Sequence[tuple[str, str]],
        compute: Callable[[list[tuple[str, str]]], Sequence[float]],
    ) -> list[float]:
        def computed(missing: list[tuple[str, str]]) -> Sequence[float]:
            values = compute(missing)
            with self.path.open("a", encoding="utf-8") as lines:
                for (question, text), value in zip(missing, values, strict=True):
                    lines.write(json.dumps([question, text, value]) + "\n")
            return values

        return super().get_many(keys, computed)


def model_digest(settings: Settings) -> str:
    """The cross-encoder's digest (its ONNX file's sha256, 16 hex digits)."""
    path = answerability_dir(settings.evidence.model_dir) / "model.onnx"
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def keep_readings(scorer: EvidenceScorer, cache: Path, settings: Settings) -> None:
    """Make ``scorer`` keep its cross-encoder readings in ``cache`` (training only)."""
    cache.mkdir(parents=True, exist_ok=True)
    scorer._answerable = StoredReadings(cache / f"learned-{model_digest(settings)}.jsonl")


def kb_digest(folder: Path, settings: Settings) -> str:
    """What retrieval over ``folder`` depends on: its files and the retrieval settings."""
    digest = hashlib.sha256(settings.retrieval.model_dump_json().encode())
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@contextmanager
def captured_decisions() -> Iterator[list[tuple[str, Conversation, list[Passage]]]]:
    """What every decision of the turns run inside is given (the evidence gate's call)."""
    seen: list[tuple[str, Conversation, list[Passage]]] = []
    original = tasks.gates.decide

    def recording(scorer: Any, settings: Any, message: str, conversation: Any, passages: Any) -> Any:
        seen.append((message, conversation, list(passages)))
        return original(scorer, settings, message, conversation, passages)

    tasks.gates.decide = recording  # type: ignore[assignment]
    try:
        yield seen
    finally:
        tasks.gates.decide = original


def _ingested(folder: Path, data_dir: Path, settings: Settings, digest: str) -> None:
    stamp = data_dir / "ingested"
    if stamp.exists() and stamp.read_text() == digest:
        return
    shutil.rmtree(data_dir, ignore_errors=True)
    kb = KnowledgeBase.open(settings, data_dir)
    ingest_paths(kb, [folder], prune=True)
    kb.close()
    stamp.write_text(digest)


def _record_kb(
    asks: Sequence[Ask], folder: Path, settings: Settings, cache: Path, progress: Callable[[str], None]
) -> dict[str, Recorded]:
    digest = kb_digest(folder, settings)
    path = cache / f"turns-{digest}.jsonl"
    kept: dict[str, Recorded] = {}
    if path.exists():
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                one = Recorded.model_validate_json(line)
                kept[one.digest] = one
    missing = [a for a in dict((a.digest(), a) for a in asks).values() if a.digest() not in kept]
    if not missing:
        return kept
    data_dir = cache / f"kb-{digest}"
    _ingested(folder, data_dir, settings, digest)
    runtime = build_runtime(settings, data_dir, engine="crewai", process="sequential")
    keep_readings(runtime.scorer, cache, settings)
    plain: Any = runtime.retriever
    try:
        with path.open("a", encoding="utf-8") as out, captured_decisions() as seen:
            for done, ask in enumerate(missing, start=1):
                runtime.retriever = WithoutPages(plain, ask.leave_out) if ask.twin else plain
                seen.clear()
                request = TurnRequest(
                    session_id=f"fit-{uuid.uuid4().hex[:12]}",
                    message=ask.message,
                    slots=ask.slots,
                    history=list(ask.history),
                )
                result = run_turn(request, runtime)
                message, conversation, passages = (
                    seen[-1] if seen else (ask.message, Conversation(()), [])
                )
                one = Recorded(
                    digest=ask.digest(),
                    message=message,
                    phrasings=list(conversation.phrasings),
                    subject=list(conversation.subject),
                    passages=passages,
                    verdict=result.verdict,
                    cited=[c.source_id for c in result.citations],
                )
                out.write(one.model_dump_json() + "\n")
                out.flush()
                kept[one.digest] = one
                if done % 50 == 0:
                    progress(f"{folder.name}: {done} of {len(missing)} turns recorded")
    finally:
        runtime.retriever = plain
        runtime.close()
    return kept


def record(
    asks: Sequence[Ask],
    settings: Settings,
    cache: Path,
    progress: Callable[[str], None] = print,
) -> dict[str, Recorded]:
    """Each ask's recorded turn (by its digest), run through the product where the cache does
    not hold it yet."""
    cache.mkdir(parents=True, exist_ok=True)
    recorded: dict[str, Recorded] = {}
    for folder in dict.fromkeys(a.kb for a in asks):
        recorded.update(
            _record_kb([a for a in asks if a.kb == folder], folder, settings, cache, progress)
        )
    return recorded
