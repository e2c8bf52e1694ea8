"""End to end with the real embedded SmolLM2 (llama.cpp), real Qdrant and real ONNX models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel
from typer.testing import CliRunner

from agents.llm.local import LocalLlamaLLM
from agents.manage import POLICY
from agents.tools.search import TOOL_DESCRIPTION, TOOL_NAME, SearchArgs
from agents.usage import UsageLedger
from main import app
from tests.conftest import EXAMPLE_KB, REPO
from tests.helpers import deadline_for_this_machine

pytestmark = [pytest.mark.e2e, pytest.mark.integration]
runner = CliRunner()
SCRIPT = REPO / "examples" / "kickoff" / "support-demo.yaml"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("e2e-data")
    assert runner.invoke(app, ["--data-dir", str(path), "ingest", str(EXAMPLE_KB)]).exit_code == 0
    return path


# every role on the model path, with room for SmolLM2 on 2 cores: the deadline itself is
# tested in tests/integration/test_deadline.py, here it would decide most turns
MODEL_ROLES = {
    **{
        f"SUPPORTCREW_ROLES__{role.upper()}": "model"
        for role in ("reformulate", "retrieve", "judge", "respond")
    },
    "SUPPORTCREW_TURN_TIMEOUT_S": str(deadline_for_this_machine(60.0)),
}


def kickoff(
    data_dir, tmp_path, *extra: str, env: dict | None = None, script: Path = SCRIPT
) -> tuple[int, list[dict]]:
    out = tmp_path / "run.jsonl"
    result = runner.invoke(
        app, ["--data-dir", str(data_dir), "kickoff", str(script), "--output", str(out), *extra], env=env
    )
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    return result.exit_code, lines


def routes(line: dict, step: str) -> list[str]:
    return [s["detail"].get("route") for s in line["trace"]["steps"] if s["name"] == step]


def calls(line: dict, role: str) -> int:
    return sum(c["role"] == role for c in line["trace"]["calls"])


def demo_part(tmp_path: Path, conversations: tuple[str, ...]) -> Path:
    """The demo script with only the named conversations."""
    script = yaml.safe_load(SCRIPT.read_text())
    script["conversations"] = [c for c in script["conversations"] if c["id"] in conversations]
    part = tmp_path / "demo-part.yaml"
    part.write_text(yaml.safe_dump(script))
    return part


# the whole demo once; each other engine and process once over an answer, its follow-up and a
# refusal (the model's turns are the e2e stage's time: about 12 s each on 2 cores)
WHOLE_DEMO = ("crewai", "sequential")
DEMO_PART = ("refund-basic", "unanswerable")


@pytest.mark.parametrize(
    ("engine", "process"),
    [
        ("crewai", "sequential"),
        ("crewai", "hierarchical"),
        ("autogen", "sequential"),
        ("autogen", "hierarchical"),
    ],
)
def test_demo_script_passes_with_the_local_model_in_every_role(data_dir, tmp_path, engine, process):
    """Every role on the model path (not the shipped default for the local model): the real
    SmolLM2 drafts, judges and searches through each framework, under the turn deadline."""
    whole = (engine, process) == WHOLE_DEMO
    script = SCRIPT if whole else demo_part(tmp_path, DEMO_PART)
    code, lines = kickoff(
        data_dir, tmp_path, "--engine", engine, "--process", process, env=MODEL_ROLES, script=script
    )
    assert len(lines) == (6 if whole else 3)
    failures = {
        (line["conversation_id"], line["turn_index"]): line["expect_failures"]
        for line in lines
        if line["expect_failures"]
    }
    assert code == 0 and not failures, failures
    for line in lines:
        steps = [s["name"] for s in line["trace"]["steps"]]
        assert line["verdict"] in ("answered", "idk", "handoff")
        sources = [c["source_id"] for c in line["citations"]]
        assert not any(s.startswith("internal/") for s in sources)
        if line["verdict"] == "handoff":  # decided from the message: no model call, no search
            assert line["trace"]["llm_calls"] == 0 and "retrieve" not in steps
            continue
        assert line["trace"]["llm_calls"] >= 1 and line["trace"]["prompt_tokens"] > 0
        # the judge (and a selector's choice) only ever ran where evidence was undecided
        undecided = routes(line, "evidence_gate").count("ask_judge")
        assert calls(line, "judge") <= undecided and calls(line, "selector") <= undecided
        # a turn that met its deadline: notes say so, or a cut-off call's error in a step
        out_of_time = any(n.startswith("deadline:") for n in line["trace"]["notes"]) or (
            "turn deadline" in json.dumps(line["trace"]["steps"])
        )
        if line["verdict"] == "answered":
            assert line["citations"] and all(c["snippet"] for c in line["citations"])
            if process == "sequential" and not out_of_time:
                assert calls(line, "responder") in (1, 2)
        if process == "hierarchical":  # the step table's policy manages: no model call
            [manage] = [s["detail"] for s in line["trace"]["steps"] if s["name"] == "manage"]
            assert manage["manager"] == POLICY and not calls(line, "manager")
            assert "retriever" in manage["delegated_to"] or not manage["completed"], manage
        else:
            assert "manage" not in steps
        searched = [
            s["detail"]["searched_by"] for s in line["trace"]["steps"] if s["name"] == "retrieve"
        ]
        assert searched and len(searched) == len(routes(line, "evidence_gate"))
        if not out_of_time:
            assert calls(line, "retriever") == len(searched)


@pytest.mark.parametrize("engine", ["crewai", "autogen"])
def test_the_shipped_defaults_answer_the_demo_without_a_model_call(data_dir, tmp_path, engine):
    code, lines = kickoff(data_dir, tmp_path, "--engine", engine)
    failures = [
        (line["conversation_id"], line["expect_failures"]) for line in lines if line["expect_failures"]
    ]
    assert code == 0 and not failures, failures
    assert all(line["trace"]["llm_calls"] == 0 for line in lines)


@pytest.mark.parametrize("engine", ["crewai", "autogen"])
def test_the_hierarchical_manager_delegates_every_searched_turn_with_the_shipped_defaults(
    data_dir, tmp_path, engine
):
    """``--process hierarchical`` with the embedded defaults: the step table's policy manages,
    every searched turn's retrieve step is handed to the retriever agent (which searches with
    its tool), no model is called, and the verdicts and citations are the sequential run's."""
    code, managed = kickoff(data_dir, tmp_path, "--engine", engine, "--process", "hierarchical")
    _, plain = kickoff(data_dir, tmp_path, "--engine", engine)
    assert code == 0 and not [line for line in managed if line["expect_failures"]]
    searched = 0
    for line, same in zip(managed, plain, strict=True):
        assert line["trace"]["llm_calls"] == 0
        assert (line["verdict"], [c["chunk_id"] for c in line["citations"]]) == (
            same["verdict"],
            [c["chunk_id"] for c in same["citations"]],
        )
        names = [s["name"] for s in line["trace"]["steps"]]
        if "retrieve" not in names:  # decided at intake: nothing to hand out
            assert "manage" not in names
            continue
        searched += 1
        [manage] = [s["detail"] for s in line["trace"]["steps"] if s["name"] == "manage"]
        assert manage["manager"] == POLICY and manage["completed"], manage
        assert "retriever" in manage["delegated_to"]
        assert names.index("manage") < names.index("retrieve")
        retrieve = next(s["detail"] for s in line["trace"]["steps"] if s["name"] == "retrieve")
        assert retrieve["searched_by"] == "retriever agent"
        if line["verdict"] == "answered":
            assert manage["delegated_to"][-1] == "responder"
    assert searched == 5


class Verdict(BaseModel):
    verdict: str
    reason: str


def test_local_model_output_is_schema_constrained_and_counted():
    llm = LocalLlamaLLM(model="local/smollm2")
    with UsageLedger.activate() as ledger:
        raw = llm.call("Is the sky blue? Answer with a verdict and a reason.", response_model=Verdict)
    parsed = Verdict.model_validate_json(raw)
    assert len(parsed.reason) <= 400
    assert len(ledger.calls) == 1 and ledger.prompt_tokens > 0


def test_local_model_is_forced_to_call_a_rendered_tool():
    calls = []

    def search_knowledge_base(queries: list[str]) -> str:
        calls.append(queries)
        return "found"

    # the schema the product's search tool sends (one to three queries)
    tool = {
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": TOOL_DESCRIPTION,
            "parameters": SearchArgs.model_json_schema(),
        },
    }
    llm = LocalLlamaLLM(model="local/smollm2")
    answer = llm.call(
        "How long does a refund take?",
        tools=[tool],
        available_functions={TOOL_NAME: search_knowledge_base},
    )
    assert answer == "found" and len(calls) == 1 and 1 <= len(calls[0]) <= 3
    assert all(query.strip() for query in calls[0])


def test_returning_customer_then_forget_leaves_nothing(data_dir, tmp_path):
    script = REPO / "examples" / "kickoff" / "returning-customer.yaml"
    out = tmp_path / "returning.jsonl"
    result = runner.invoke(
        app, ["--data-dir", str(data_dir), "kickoff", str(script), "--output", str(out)]
    )
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert result.exit_code == 0, [line["expect_failures"] for line in lines]
    shown = runner.invoke(app, ["--data-dir", str(data_dir), "memory", "export", "--customer", "c-100"])
    exported = json.loads(shown.stdout)
    assert {e["value"] for e in exported["entities"]} >= {"ORD-55812"}
    assert any(m["session_id"].startswith("kickoff-first-visit-") for m in exported["memories"])
    forgot = runner.invoke(
        app, ["--data-dir", str(data_dir), "memory", "forget", "--customer", "c-100", "--yes"]
    )
    assert forgot.exit_code == 0 and "forgot" in forgot.output
    after = json.loads(
        runner.invoke(
            app, ["--data-dir", str(data_dir), "memory", "export", "--customer", "c-100"]
        ).stdout
    )
    assert after["sessions"] == after["entities"] == after["memories"] == []
