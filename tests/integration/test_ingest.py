"""Ingest into a real embedded store: idempotent, replacing, pruning, tolerant of bad files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from storage.kb.ingest import ingest_paths
from storage.kb.knowledge_base import KnowledgeBase
from storage.qdrant.store import Match
from storage.retrieval.request import RetrievalRequest
from tests.conftest import EXAMPLE_KB

pytestmark = pytest.mark.integration


@pytest.fixture
def workspace(tmp_path, settings):
    kb_files = tmp_path / "kb"
    for name in ("billing/refunds.md", "billing/annual-plans.md", "help/contact-support.txt"):
        target = kb_files / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(EXAMPLE_KB / name, target)
    kb = KnowledgeBase.open(settings, tmp_path / "data")
    yield kb, kb_files
    kb.close()


def chunk_texts(kb: KnowledgeBase, source_id: str) -> list[str]:
    records = kb.store.scroll(kb.collection, Match("source_id", (source_id,)))
    return [r.payload["text"] for r in sorted(records, key=lambda r: r.payload["split_id"])]


def test_first_ingest_stores_chunks_with_their_metadata(workspace):
    kb, files = workspace
    report = ingest_paths(kb, [files])
    assert (report.files, report.documents, report.skipped) == (3, 3, [])
    assert report.chunks == kb.store.count(kb.collection)
    [first] = kb.store.scroll(kb.collection, Match("chunk_id", ("billing/refunds.md#0",)))
    payload = first.payload
    assert payload["access"] == "public" and payload["product"] == "cloud"
    assert payload["title"] == "Refunds" and payload["split_id"] == 0
    # the title-only "# Refunds" section is dropped; offsets point into the document body
    assert payload["split_idx_start"] == len("# Refunds\n\n")
    assert payload["text"].startswith("## How long does a refund take?")
    assert payload["url"] == "https://help.clouddesk.example/billing/refunds"


def test_reingesting_unchanged_files_changes_nothing(workspace):
    kb, files = workspace
    first = ingest_paths(kb, [files])
    before = {r.id: r.payload for r in kb.store.scroll(kb.collection)}
    second = ingest_paths(kb, [files])
    assert (second.unchanged, second.documents, second.chunks) == (3, 0, 0)
    assert {r.id: r.payload for r in kb.store.scroll(kb.collection)} == before
    assert first.chunks == len(before)


def test_a_changed_file_replaces_its_old_chunks(workspace):
    kb, files = workspace
    ingest_paths(kb, [files])
    path = files / "billing" / "refunds.md"
    path.write_text(
        path.read_text().split("## Who can get a refund?")[0] + "Refunds now take 3 business days.\n",
        encoding="utf-8",
    )
    report = ingest_paths(kb, [files])
    assert (report.replaced, report.unchanged) == (1, 2)
    texts = chunk_texts(kb, "billing/refunds.md")
    joined = " ".join(texts)
    assert "3 business days" in joined and "Partial refunds" not in joined
    assert (
        len(
            {
                r.payload["content_hash"]
                for r in kb.store.scroll(kb.collection, Match("source_id", ("billing/refunds.md",)))
            }
        )
        == 1
    )


def test_prune_removes_documents_whose_file_is_gone(workspace):
    kb, files = workspace
    ingest_paths(kb, [files])
    (files / "help" / "contact-support.txt").unlink()
    kept = ingest_paths(kb, [files])
    assert kept.pruned == 0 and chunk_texts(kb, "help/contact-support.txt")
    report = ingest_paths(kb, [files], prune=True)
    assert report.pruned == 1
    assert chunk_texts(kb, "help/contact-support.txt") == []
    assert chunk_texts(kb, "billing/refunds.md")


def test_bad_files_are_skipped_and_the_rest_lands(workspace):
    kb, files = workspace
    (files / "bad-front-matter.md").write_text("---\naccess: everyone\n---\nText.\n")
    (files / "latin1.txt").write_bytes("caf\xe9 au lait".encode("latin-1"))
    (files / "empty.md").write_text("")
    report = ingest_paths(kb, [files, files / "missing.md"])
    reasons = " | ".join(reason for _, reason in report.skipped)
    assert len(report.skipped) == 4
    assert "bad front matter: access" in reasons and "not UTF-8" in reasons
    assert "empty document" in reasons and "no such file" in reasons
    assert report.documents == 3


def test_duplicate_ids_keep_the_first_document(workspace):
    kb, files = workspace
    (files / "copy.md").write_text("---\nid: billing/refunds.md\n---\nA copy.\n")
    report = ingest_paths(kb, [files])
    assert any("duplicate id" in reason for _, reason in report.skipped)
    assert "A copy." not in " ".join(chunk_texts(kb, "billing/refunds.md"))


def test_a_failed_encode_loses_nothing_already_stored(workspace, monkeypatch):
    kb, files = workspace
    ingest_paths(kb, [files])
    before = sorted(r.id for r in kb.store.scroll(kb.collection))
    (files / "billing" / "refunds.md").write_text("---\ntitle: Refunds\n---\nChanged.\n")

    def broken(_batch):
        raise RuntimeError("model crashed")

    monkeypatch.setattr(kb, "build_points", broken)
    with pytest.raises(RuntimeError):
        ingest_paths(kb, [files])
    assert sorted(r.id for r in kb.store.scroll(kb.collection)) == before


def test_recreate_starts_from_an_empty_collection(workspace, tmp_path):
    kb, files = workspace
    ingest_paths(kb, [files])
    other = tmp_path / "other"
    other.mkdir()
    (other / "only.txt").write_text("Only this document.")
    ingest_paths(kb, [other], recreate=True)
    assert {r.payload["source_id"] for r in kb.store.scroll(kb.collection)} == {"only.txt"}


def test_both_backends_rank_the_example_kb_alike(settings, tmp_path, example_kb):
    from qdrant_client import QdrantClient

    from storage.qdrant.server_store import ServerStore
    from storage.retrieval.retriever import QdrantRetriever

    server_kb = KnowledgeBase(
        settings,
        ServerStore(client=QdrantClient(path=str(tmp_path / "q"))),
        encoders=example_kb.encoders,
    )
    ingest_paths(server_kb, [EXAMPLE_KB])
    slots = {"tier": "enterprise", "access_level": "customer"}
    for query in ("How long does a refund take?", "SAML setup", "API rate limits"):
        edge = QdrantRetriever(kb=example_kb).search_queries(RetrievalRequest([query], slots, top_k=3))
        server = QdrantRetriever(kb=server_kb).search_queries(RetrievalRequest([query], slots, top_k=3))
        assert [r.metadata["chunk_id"] for r in edge.results] == [
            r.metadata["chunk_id"] for r in server.results
        ]
    server_kb.close()


def test_ingest_root_paths_are_relative_source_ids(settings, tmp_path):
    kb = KnowledgeBase.open(settings, tmp_path / "d")
    report = ingest_paths(kb, [Path(EXAMPLE_KB / "sso")])
    ids = {r.payload["source_id"] for r in kb.store.scroll(kb.collection)}
    kb.close()
    assert report.documents == 3
    assert ids == {"saml-setup.md", "scim-provisioning.md", "sso-troubleshooting.md"}


def test_one_tenants_documents_never_move_the_shared_term_statistics(workspace):
    kb, kb_files = workspace
    ingest_paths(kb, [kb_files])
    shared = kb.term_statistics()
    private = kb_files / "globex" / "runbook.md"
    private.parent.mkdir()
    private.write_text(
        "---\ntitle: Zorblax override\ntenant: globex\naccess: internal\n---\n"
        "The zorblax override refunds a quokka invoice at once.\n"
    )
    report = ingest_paths(kb, [kb_files])
    assert not report.skipped
    assert kb.term_statistics() == shared  # the gate of another tenant does not move
