"""The command line, driven as a user would (typer's runner, real store and models)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from main import app
from tests.conftest import EXAMPLE_KB

pytestmark = pytest.mark.integration
runner = CliRunner()


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli-data")
    result = runner.invoke(app, ["--data-dir", str(path), "ingest", str(EXAMPLE_KB)])
    assert result.exit_code == 0, result.output
    return path


def test_help_lists_the_commands():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("ingest", "search", "eval"):
        assert command in result.output


def test_ingest_prints_a_summary_and_is_idempotent(data_dir):
    result = runner.invoke(app, ["--data-dir", str(data_dir), "ingest", str(EXAMPLE_KB), "--json"])
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    assert report["unchanged"] == 28 and report["replaced"] == 0 and not report["skipped"]


def test_search_json_shows_hits_and_filters(data_dir):
    result = runner.invoke(
        app,
        [
            "--data-dir",
            str(data_dir),
            "search",
            "refund time",
            "--slot",
            "tier=basic",
            "--slot",
            "access_level=customer",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["results"][0]["metadata"]["source_id"] == "billing/refunds.md"
    assert payload["metadata"]["filters"]["tier"].startswith("enforced")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search", "refund", "--slot", "colour=red"], "unknown slot 'colour'"),
        (["search", "refund", "--slot", "tier"], "expected key=value"),
        (["search", "refund", "--slot", "access_level=root"], "access_level: 'root'"),
        (["search", "   "], "empty query"),
        (["search", "refund", "--pipeline", "magic"], "--pipeline 'magic'"),
        (["eval", "retrieval", "--dataset", "/nonexistent"], "missing corpus.jsonl"),
    ],
)
def test_bad_arguments_give_one_clear_line(data_dir, args, message):
    result = runner.invoke(app, ["--data-dir", str(data_dir), *args])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_malformed_config_is_named(data_dir, tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("retrieval: {top_k: lots}\n")
    result = runner.invoke(
        app, ["--data-dir", str(data_dir), "--config", str(config), "search", "refund"]
    )
    assert result.exit_code == 2
    assert "retrieval.top_k" in result.output


@pytest.mark.parametrize(
    "args", [["search", "refund"], ["kickoff", "examples/kickoff/support-demo.yaml"]]
)
def test_using_an_empty_knowledge_base_says_what_to_do(tmp_path, args):
    result = runner.invoke(app, ["--data-dir", str(tmp_path), *args])
    assert result.exit_code == 2
    assert "is empty; run `python main.py ingest examples/kb` first" in result.output


def test_chat_refuses_a_customer_id_memory_would_refuse_before_any_turn(tmp_path):
    result = runner.invoke(app, ["--data-dir", str(tmp_path), "chat", "--customer", " c-space"])
    assert result.exit_code == 2 and "leading or trailing spaces" in result.output
    assert "Traceback" not in result.output


def test_kickoff_output_into_a_missing_folder_is_refused_before_any_turn(tmp_path):
    out = tmp_path / "nowhere" / "out.jsonl"
    args = ["kickoff", "examples/kickoff/support-demo.yaml", "--output", str(out)]
    result = runner.invoke(app, ["--data-dir", str(tmp_path), *args])
    assert result.exit_code == 2 and "does not exist" in result.output
    assert "Traceback" not in result.output and not out.parent.exists()


def test_ingest_reports_skipped_files(tmp_path):
    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\nA fine document.\n")
    (folder / "bad.md").write_text("---\naccess: nobody\n---\nText\n")
    result = runner.invoke(app, ["--data-dir", str(tmp_path / "d"), "ingest", str(folder)])
    assert result.exit_code == 0
    skipped = [line for line in result.output.splitlines() if line.startswith("skipped ")]
    assert len(skipped) == 1, result.output  # one line, whatever the width or the path's length
    assert str(folder / "bad.md") in skipped[0] and "bad front matter" in skipped[0]


def test_memory_commands_show_export_and_forget(data_dir):
    from config.settings import load_settings
    from storage.kb.embeddings import load_encoders
    from storage.memory import Entity, MemoryStore, Scope
    from storage.qdrant.edge_store import EdgeStore

    store = EdgeStore(data_dir / "qdrant")
    memory = MemoryStore(store, load_encoders(load_settings()))
    memory.add_turn(Scope("c-7"), "s1", 0, {"user": "order ORD-123 late", "status": "done"})
    memory.upsert_entities(Scope("c-7"), [Entity("order", "ORD-123")], "s1#0")
    memory.remember(Scope("c-7"), "s1", "late order", "handoff: passed on", [])
    memory.add_turn(Scope("c-8"), "s1", 0, {"user": "someone else", "status": "done"})
    store.close()
    base = ["--data-dir", str(data_dir), "memory"]
    shown = runner.invoke(app, [*base, "show", "--customer", "c-7"])
    assert shown.exit_code == 0 and "1 stored turns in 1 session(s): s1" in shown.output
    listed = json.loads(runner.invoke(app, [*base, "show", "--customer", "c-7", "--json"]).stdout)
    assert [e["value"] for e in listed["entities"]] == ["ORD-123"]
    assert [m["summary"] for m in listed["memories"]] == ["late order"]
    exported = json.loads(runner.invoke(app, [*base, "export", "--customer", "c-7"]).stdout)
    assert len(exported["sessions"]) == 1 and exported["customer_id"] == "c-7"
    kept = runner.invoke(app, [*base, "forget", "--customer", "c-7"], input="n\n")
    assert kept.exit_code == 1 and "cannot be undone" in kept.output  # asked; nothing erased
    assert json.loads(runner.invoke(app, [*base, "export", "--customer", "c-7"]).stdout)["sessions"]
    forgot = runner.invoke(app, [*base, "forget", "--customer", "c-7"], input="y\n")
    assert "forgot 3 record(s) of c-7: 1 stored turns" in forgot.output
    assert json.loads(runner.invoke(app, [*base, "export", "--customer", "c-8"]).stdout)["sessions"]
    bad = runner.invoke(app, [*base, "show", "--customer", "  "])
    assert bad.exit_code == 2 and "customer_id is required" in bad.output
