"""Labelled question sets: both layouts read, every malformed input named."""

import json

import pytest

from evaluation.answer_sets import load_answer_set
from evaluation.retrieval import DatasetError
from tests.conftest import REPO


def pack(tmp_path, rows, dataset_yaml=None, kb=True):
    if kb:
        (tmp_path / "kb").mkdir()
    (tmp_path / "questions.jsonl").write_text(
        "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n"
    )
    if dataset_yaml is not None:
        (tmp_path / "dataset.yaml").write_text(dataset_yaml)
    return tmp_path


GOOD = {
    "id": "q1",
    "question": "How long does a refund take?",
    "answerable": True,
    "doc_ids": ["billing/refunds.md"],
    "evidence": ["5 to 7 business days"],
}
UNANSWERABLE = {"id": "q2", "question": "Student discount?", "answerable": False, "doc_ids": []}


def test_the_shipped_near_miss_set_reads_with_its_own_kb_and_slots():
    found = load_answer_set(REPO / "examples" / "answer-sets" / "near-miss")
    assert found.kb == (REPO / "examples" / "kb").resolve()
    assert found.slots == {"tier": "enterprise", "access_level": "customer"}
    assert sum(q.answerable for q in found.questions) == 14
    assert sum(not q.answerable for q in found.questions) == 14


def test_a_pack_without_dataset_yaml_uses_kb_and_public_access(tmp_path):
    found = load_answer_set(pack(tmp_path, [GOOD, UNANSWERABLE]))
    assert found.kb == (tmp_path / "kb").resolve() and found.slots == {"access_level": "public"}
    assert [q.evidence for q in found.questions] == [["5 to 7 business days"], []]


@pytest.mark.parametrize(
    ("rows", "dataset_yaml", "kb", "message"),
    [
        ([GOOD, "{not json"], None, True, "questions.jsonl line 2"),
        ([{**GOOD, "question": ""}], None, True, "line 1"),
        ([{**GOOD, "doc_ids": []}], None, True, "need doc_ids.*q1"),
        ([{**UNANSWERABLE, "doc_ids": ["x.md"]}], None, True, "q2"),
        ([GOOD], None, False, "knowledge base folder 'kb' does not exist"),
        ([GOOD], "kb: [1, 2\n", True, "dataset.yaml"),
        ([GOOD], "slots: {tier: enterprise}\nretriever: mine\n", True, "retriever"),
        ([], None, True, "no questions"),
    ],
)
def test_malformed_packs_are_named(tmp_path, rows, dataset_yaml, kb, message):
    with pytest.raises(DatasetError, match=message):
        load_answer_set(pack(tmp_path, rows, dataset_yaml, kb))


def test_beir_queries_without_judgements_are_unanswerable_unless_another_split_judges_them(tmp_path):
    (tmp_path / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "text": "x"}) + "\n")
    (tmp_path / "queries.jsonl").write_text(
        "\n".join(json.dumps({"_id": q, "text": q}) for q in ("a", "b", "c")) + "\n"
    )
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\na\td1\t1\n")
    (tmp_path / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nc\td1\t1\n")
    found = load_answer_set(tmp_path, "test")
    assert [(q.id, q.answerable, q.doc_ids) for q in found.questions] == [
        ("a", True, ["d1"]),
        ("b", False, []),
    ]


@pytest.mark.parametrize("layout", ["missing", "file", "empty"])
def test_a_folder_in_no_known_layout_is_named(tmp_path, layout):
    target = tmp_path / "x"
    if layout == "file":
        target.write_text("")
    elif layout == "empty":
        target.mkdir()
    with pytest.raises(DatasetError, match=r"not a folder|neither a pack"):
        load_answer_set(target)
