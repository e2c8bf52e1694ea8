"""The answer decision's training rows, recorded from the product's own turn.

Every turn goes through ``agents.turn.run_turn`` (CrewAI, sequential, every role on the
evidence path) over its knowledge base, with its conversation as the request's history; the
row keeps what the turn's decision read (``Decision.readings``: every phrasing's candidates
with their frozen features, ``tasks/decision_features.py``), so ``training/decision_fit.py``
fits the page choice and the gate by settling the very records the product computed.

Two kinds of turn, each asked twice:

* the doc2dial training pack's question turns (``training/dialogue_pack.py``), of the folds
  named, over the pack's ``kb/``, in their conversation;
* the real questions of the dev answer sets (doc2dial dev and ours over examples/kb), each as
  the first turn of a conversation (they carry what the pack has not: error codes, plans,
  customers' own references);

and each asked again as its **unanswerable twin**: the same turn with every page that answers
it taken out of what retrieval returns (``WithoutPages``), so the neighbouring pages of the
same subject are what the decision reads.

    python -m training.decision_rows --folds 3,4 --model-dir /tmp/ce-A/ship --out /tmp/rows.jsonl
"""

from __future__ import annotations

import argparse
import json
import shutil
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agents.build import build_runtime
from agents.turn import run_turn
from config.settings import Settings, load_settings
from config.telemetry import apply_telemetry_policy
from evaluation.answer_sets import load_answer_set
from evaluation.reporting import DATASETS, ROOT
from storage.kb.ingest import ingest_paths
from storage.kb.knowledge_base import KnowledgeBase
from storage.retrieval.request import RetrievalRequest
from storage.retrieval.results import SearchResultList
from tasks.schemas import HistoryTurn, TurnRequest, TurnResult
from training.dialogue_pack import PACK, question_turns

DEV_SETS = (
    DATASETS / "doc2dial-support-dev",
    *(
        ROOT / "examples" / "answer-sets" / n
        for n in ("near-miss", "support-problems", "support-requests")
    ),
)
TWIN_DEPTH = 40  # a twin's search goes this much deeper, so it still gets top_k other passages


@dataclass(frozen=True)
class Ask:
    """One turn to record: its message and conversation, and what answers it."""

    set: str
    key: str
    message: str
    history: tuple[HistoryTurn, ...]
    gold: tuple[str, ...]  # the pages that answer it (none: unanswerable)
    slots: dict[str, str]
    fold: int = -1  # the pack's fold (-1: a dev set)
    group: str = ""  # what is held out together (the pack's fold and page; a dev question)


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


def pack_asks(folds: set[int]) -> Iterator[Ask]:
    for turn in question_turns():
        if turn.fold in folds:
            yield Ask("pack", turn.key, turn.text, turn.history, turn.gold, {}, turn.fold, turn.page)


def dev_asks(directory: Path) -> Iterator[Ask]:
    answer_set = load_answer_set(directory)
    for question in answer_set.questions:
        yield Ask(
            answer_set.name,
            question.id,
            question.question,
            (),
            tuple(question.doc_ids) if question.answerable else (),
            dict(answer_set.slots),
            group=f"{answer_set.name}/{question.id}",
        )


def row(ask: Ask, twin: bool, result: TurnResult) -> dict[str, Any]:
    """What training keeps of a turn: its labels, its decision's readings and its outcome."""
    decision = result.trace.last_evidence()
    return {
        "set": ask.set,
        "key": ask.key,
        "group": ask.group,
        "fold": ask.fold,
        "twin": twin,
        "first": not ask.history,
        "answerable": bool(ask.gold) and not twin,
        "gold": list(ask.gold),
        "subject": list(ask.history[-1].sources) if ask.history else [],
        "message": ask.message,
        "verdict": result.verdict,
        "cited": [c.source_id for c in result.citations],
        "answer": result.answer,
        "readings": [r.model_dump() for r in decision.readings] if decision else [],
        "action": decision.action if decision else None,
    }


def record(asks: Sequence[Ask], kb_folder: Path, data_dir: Path, settings: Settings, out: Any) -> int:
    """Run every ask and its twin through the product's turn over ``kb_folder``."""
    shutil.rmtree(data_dir, ignore_errors=True)
    kb = KnowledgeBase.open(settings, data_dir)
    ingest_paths(kb, [kb_folder], prune=True)
    kb.close()
    runtime = build_runtime(settings, data_dir, engine="crewai", process="sequential")
    plain: Any = runtime.retriever
    written = 0
    try:
        for ask in asks:
            for twin in (False, True) if ask.gold else (False,):
                runtime.retriever = WithoutPages(plain, ask.gold) if twin else plain  # type: ignore[assignment]
                request = TurnRequest(
                    session_id=f"train-{uuid.uuid4().hex[:12]}",
                    message=ask.message,
                    slots=ask.slots,
                    history=list(ask.history),
                )
                out.write(json.dumps(row(ask, twin, run_turn(request, runtime))) + "\n")
                out.flush()
                written += 1
    finally:
        runtime.retriever = plain
        runtime.close()
    return written


def main() -> None:
    apply_telemetry_policy()
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--folds", default="3,4", help="the pack's folds to record")
    parser.add_argument("--model-dir", type=Path, help="the cross-encoder (default: the shipped one)")
    parser.add_argument("--no-dev", action="store_true", help="only the pack")
    parser.add_argument("--limit", type=int, default=0, help="only the first N asks of each set")
    parser.add_argument("--out", type=Path, default=Path("/tmp/decision-rows.jsonl"))
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/supportcrew-decision-rows"))
    args = parser.parse_args()
    settings = load_settings()
    if args.model_dir:
        settings = settings.model_copy(
            update={"evidence": settings.evidence.model_copy(update={"model_dir": args.model_dir})}
        )
    # no deadline: a row records the whole decision whatever else the machine is doing
    settings = settings.model_copy(update={"turn_timeout_s": 600})
    folds = {int(f) for f in args.folds.split(",") if f}
    with args.out.open("w", encoding="utf-8") as out:
        limit = args.limit or None
        count = record(
            list(pack_asks(folds))[:limit], PACK / "kb", args.data_dir / "pack", settings, out
        )
        print(f"pack: {count} turns", flush=True)
        for directory in () if args.no_dev else DEV_SETS:
            answer_set = load_answer_set(directory)
            count = record(
                list(dev_asks(directory))[:limit],
                answer_set.kb,
                args.data_dir / directory.name,
                settings,
                out,
            )
            print(f"{directory.name}: {count} turns", flush=True)


if __name__ == "__main__":
    main()
