"""Replay before going live (``main.py replay``): the customers' recent questions against a
changed knowledge base; a change that loses an answer exits 1, so a team can put it in CI."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from main import app as cli

pytestmark = pytest.mark.integration
EXAMPLE_KB = Path(__file__).resolve().parents[2] / "examples" / "kb"
REFUND = "How long does a refund take?"
PASSWORD = "How do I reset my password?"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A data dir with examples/kb, a changed collection without the refunds and the
    password pages, and
    customers' recorded turns (questions, a courtesy line, a yes to the offer)."""
    from config.settings import load_settings
    from storage.kb.knowledge_base import KnowledgeBase
    from storage.memory import MemoryStore, Scope

    root = tmp_path_factory.mktemp("replay")
    data = root / "data"
    changed_kb = root / "kb-changed"
    shutil.copytree(EXAMPLE_KB, changed_kb)
    (changed_kb / "billing" / "refunds.md").unlink()  # the annual-plans page says it too
    (changed_kb / "accounts" / "reset-password.md").unlink()
    runner = CliRunner()
    for args in (
        ["--data-dir", str(data), "ingest", str(EXAMPLE_KB)],
        ["--data-dir", str(data), "ingest", str(changed_kb), "--collection", "kb_changed"],
    ):
        done = runner.invoke(cli, args)
        assert done.exit_code == 0, done.output
    kb = KnowledgeBase.open(load_settings(), data)
    try:
        memory = MemoryStore(kb.store, kb.encoders, load_settings().slots)
        now = time.time()
        said = [
            (REFUND, "question"),
            ("Thanks, bye!", "courtesy"),
            (PASSWORD, "question"),
            ("yes", "accept"),
            (REFUND, "question"),  # asked again: replayed once
        ]
        for index, (text, kind) in enumerate(said):
            memory.add_turn(
                Scope("c-1", ""),
                f"s-{index}",
                0,
                {"user": text, "kind": kind, "slots": {}, "status": "done", "verdict": "answered"},
            )
        old = {"user": "Do you ship to Mars?", "kind": "question", "slots": {}, "status": "done"}
        memory.add_turn(Scope("c-2", ""), "s-old", 0, {**old, "ts": now - 60 * 86_400.0})
    finally:
        kb.close()
    same = root / "same.yaml"
    same.write_text("qdrant: {collection: kb}\n")
    changed = root / "changed.yaml"
    changed.write_text("qdrant: {collection: kb_changed}\n")
    return data, same, changed


def test_a_change_that_loses_an_answer_exits_1_naming_it(recorded):
    data, _, changed = recorded
    done = CliRunner().invoke(
        cli, ["--data-dir", str(data), "replay", "--against", str(changed), "--json"]
    )
    assert done.exit_code == 1, done.output
    report = json.loads(done.stdout[done.stdout.index("{") :])
    asked = [c["question"] for c in report["changes"]]
    # each question once; courtesy, a yes and a question of two months ago are not replayed
    assert sorted(asked) == sorted([REFUND, PASSWORD])
    by_question = {c["question"]: c for c in report["changes"]}
    lost = by_question[PASSWORD]
    assert lost["change"] == "lost" and lost["before"]["pages"] == ["accounts/reset-password.md"]
    moved = by_question[REFUND]
    assert moved["change"] == "moved" and moved["after"]["pages"] == ["billing/annual-plans.md"]
    assert report["summary"] == {"newly_answered": 0, "lost": 1, "moved": 1, "same": 0}


def test_a_change_that_loses_nothing_exits_0(recorded):
    data, same, _ = recorded
    done = CliRunner().invoke(cli, ["--data-dir", str(data), "replay", "--against", str(same)])
    assert done.exit_code == 0, done.output
    assert "nothing changes" in done.output and "lost: 0" in done.output


def test_a_settings_file_that_does_not_exist_is_named(recorded):
    data, _, _ = recorded
    done = CliRunner().invoke(
        cli, ["--data-dir", str(data), "replay", "--against", str(data / "nowhere.yaml")]
    )
    assert done.exit_code == 2 and "nowhere.yaml" in done.output
