"""What every bench script shares: the repository root, where results go, Markdown tables, a
knowledge base opened for an answer set, and an earlier checkout's server run beside this one
(in its own process, from its own folder: its own code). Telemetry off and offline models are
set by the package (``bench/__init__.py``), where the process starts.

Usage::

    from bench._common import ROOT, RESULTS, open_answer_set
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
from collections.abc import Iterator
from pathlib import Path

from evaluation.dev_runs import OpenedSet, open_answer_set, product_rows  # noqa: F401
from evaluation.reporting import RESULTS, table, write_results  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
# what the pilot's load benches ask (three answerable over examples/kb, one not)
SERVICE_QUESTIONS = [
    "How long does a refund take?",
    "What are the API rate limits on the Pro plan?",
    "How do I export all my files?",
    "Do you offer a student discount?",
]


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


def start_serving(
    repo: Path, data_dir: Path, keys: list[dict], ingest: bool = True
) -> tuple[str, subprocess.Popen[bytes]]:
    """``repo``'s own ``main.py serve`` over ``data_dir`` (the example KB ingested first unless
    ``ingest`` is False) with ``keys``, started and ready: (base URL, process). The caller
    stops it; TimeoutError (the process killed) when it is not ready within 180 s."""
    import httpx

    if ingest:
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
    deadline = time.time() + 180
    while time.time() < deadline:
        try:
            if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                return base, server
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    server.kill()
    server.wait()
    raise TimeoutError("the service did not become ready within 180 s")


@contextlib.contextmanager
def serving(
    repo: Path, data_dir: Path, keys: list[dict], ingest: bool = True
) -> Iterator[tuple[str, int]]:
    """:func:`start_serving`, as a context: (base URL, server pid). Stopped on exit."""
    try:
        base, server = start_serving(repo, data_dir, keys, ingest)
    except TimeoutError as exc:
        raise SystemExit(str(exc)) from None
    try:
        yield base, server.pid
    finally:
        server.terminate()
        server.wait(timeout=30)
