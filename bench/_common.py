"""What every bench script shares: the repository on ``sys.path``, telemetry off and offline
models (set where the process starts), where results go, Markdown tables, and a knowledge base
opened for an answer set.

Usage (first import of a bench script)::

    from _common import ROOT, RESULTS, open_answer_set
    opened = open_answer_set(ROOT / "examples" / "answer-sets" / "near-miss", data_dir)
    passages = opened.search("How many owners can a workspace have?")
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
# what the pilot's load benches ask (three answerable over examples/kb, one not)
SERVICE_QUESTIONS = [
    "How long does a refund take?",
    "What are the API rate limits on the Pro plan?",
    "How do I export all my files?",
    "Do you offer a student discount?",
]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from config.telemetry import apply_telemetry_policy  # noqa: E402

apply_telemetry_policy()  # a bench script is where its process starts

from agents.build import build_runtime  # noqa: E402
from config.settings import Settings, load_settings  # noqa: E402
from evaluation.answer_sets import AnswerSet, load_answer_set  # noqa: E402
from evaluation.answers import answer_set_settings, evaluate_answers  # noqa: E402
from storage.kb.ingest import ingest_paths  # noqa: E402
from storage.kb.knowledge_base import KnowledgeBase  # noqa: E402
from storage.retrieval.retriever import QdrantRetriever  # noqa: E402
from tasks.evidence import EvidenceScorer  # noqa: E402
from tasks.schemas import Passage  # noqa: E402


@dataclass
class OpenedSet:
    answer_set: AnswerSet
    settings: Settings
    kb: KnowledgeBase
    retriever: QdrantRetriever
    scorer: EvidenceScorer

    def search(self, question: str, top_k: int | None = None) -> list[Passage]:
        found = self.retriever.search_queries([question], self.answer_set.slots, top_k=top_k)
        return Passage.numbered(found.results)

    def close(self) -> None:
        self.kb.close()


def open_answer_set(directory: Path, data_dir: Path, settings: Settings | None = None) -> OpenedSet:
    """The answer set's knowledge base ingested (idempotently) into ``data_dir``."""
    settings = settings or load_settings()
    answer_set = load_answer_set(directory)
    kb = KnowledgeBase.open(settings, data_dir)
    ingest_paths(kb, [answer_set.kb], prune=True)
    scorer = EvidenceScorer(kb.encoders, settings.evidence, kb.term_statistics)
    return OpenedSet(answer_set, settings, kb, QdrantRetriever(kb=kb), scorer)


def product_rows(
    pack: Path, data_dir: Path, engine: str, settings: Settings | None = None
) -> list[dict]:
    """``main.py eval answers`` on ``pack``: every question as the first turn of a new
    conversation, through the product's turn on ``engine`` (``settings``: another
    configuration than the loaded one)."""
    settings = answer_set_settings(settings or load_settings(), pack.name, data_dir)
    opened = open_answer_set(pack, data_dir, settings)  # ingests, idempotently
    answer_set = opened.answer_set
    opened.close()
    runtime = build_runtime(settings, data_dir, engine=engine, process="sequential")
    try:
        return evaluate_answers(runtime, answer_set).rows
    finally:
        runtime.close()


def table(columns: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    """A Markdown table."""
    return [
        "| " + " | ".join(columns) + " |",
        "|---" * len(columns) + "|",
        *("| " + " | ".join(str(cell) for cell in row) + " |" for row in rows),
    ]


def write_results(name: str, lines: list[str], data: object) -> None:
    """Print the Markdown and write bench/results/<name>.md and .json."""
    print("\n".join(lines))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n")
    (RESULTS / f"{name}.json").write_text(json.dumps(data, indent=1) + "\n")


def comparison_parser(doc: str | None, data_dir: str) -> argparse.ArgumentParser:
    """A bench script's arguments: its docstring as help, ``--data-dir`` and
    ``--baseline-repo`` (an earlier checkout run beside this one)."""
    parser = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, default=Path(data_dir))
    parser.add_argument("--baseline-repo", type=Path, help="an earlier checkout to compare")
    return parser


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def serving(repo: Path, data_dir: Path, keys: list[dict]) -> Iterator[tuple[str, int]]:
    """``repo``'s own ``main.py serve`` over ``data_dir`` (the example KB ingested) with
    ``keys``, ready: (base URL, server pid). Stopped on exit."""
    import httpx

    subprocess.run(
        [sys.executable, "main.py", "--data-dir", str(data_dir), "ingest", "examples/kb"],
        cwd=repo,
        check=True,
        capture_output=True,
    )
    port = free_port()
    env = {**os.environ, "SUPPORTCREW_PILOT__API_KEYS": json.dumps(keys)}
    server = subprocess.Popen(
        [sys.executable, "main.py", "--data-dir", str(data_dir), "serve", "--port", str(port)],
        cwd=repo,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 180
        while time.time() < deadline:
            try:
                if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        else:
            raise SystemExit("the service did not become ready within 180 s")
        yield base, server.pid
    finally:
        server.terminate()
        server.wait(timeout=30)
