"""The model path against a real OpenAI-compatible server: llama-cpp-python's own
``python -m llama_cpp.server`` serving the shipped SmolLM2 GGUF on loopback, every role on the
model path, both engines. The turn holds its deadline whatever the server does, the gates hold
what the small model gets wrong, and the process ends promptly after the last turn."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request

import pytest

from agents.llm.model_file import local_gguf
from tests.conftest import EXAMPLE_KB, REPO
from tests.helpers import deadline_for_this_machine, free_port

pytestmark = [pytest.mark.e2e, pytest.mark.integration]
TIMEOUT_S = deadline_for_this_machine(12.0)  # 12 s on a quiet 2-core machine
TURNS = [
    ("How long does a refund take?", "answered", "billing/refunds.md"),
    ("Do you offer a student discount?", "idk", None),
]


@pytest.fixture(scope="module")
def server():
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(local_gguf()),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "4096",
            "--n_threads",
            "2",
            "--chat_format",
            "chatml-function-calling",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url + "/models", timeout=2):
                break
        except OSError:
            time.sleep(0.5)
    yield url
    process.terminate()
    try:  # uvicorn's graceful stop waits for a request the deadline cut: not ours to wait on
        process.wait(20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(20)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("server-data")
    done = subprocess.run(
        [sys.executable, "main.py", "--data-dir", str(path), "ingest", str(EXAMPLE_KB)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return path


@pytest.mark.parametrize(
    ("engine", "process"),
    [
        ("crewai", "sequential"),
        ("autogen", "sequential"),
        ("crewai", "hierarchical"),
        ("autogen", "hierarchical"),
    ],
)
def test_turns_against_a_real_model_server_hold_their_deadline(
    server, data_dir, tmp_path, engine, process
):
    script = tmp_path / "script.yaml"
    script.write_text(
        json.dumps(
            {
                "conversations": [
                    {
                        "id": f"c{n}",
                        "customer_id": "c-1",
                        "slots": {"tier": "pro", "access_level": "customer"},
                        "turns": [{"user": question}],
                    }
                    for n, (question, _, _) in enumerate(TURNS)
                ]
            }
        )
    )
    output = tmp_path / "out.jsonl"
    env = {
        **os.environ,
        "SUPPORTCREW_LLM__PROVIDER": "openai/smollm2",
        "SUPPORTCREW_LLM__BASE_URL": server,
        "SUPPORTCREW_TURN_TIMEOUT_S": str(TIMEOUT_S),
        **{
            f"SUPPORTCREW_ROLES__{role}": "model"
            for role in ("REFORMULATE", "RETRIEVE", "JUDGE", "RESPOND")
        },
    }
    env.pop("OPENAI_API_KEY", None)  # the local server needs no key
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "main.py",
            "--data-dir",
            str(data_dir),
            "kickoff",
            str(script),
            "--engine",
            engine,
            "--process",
            process,
            "--output",
            str(output),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=len(TURNS) * (TIMEOUT_S + 1) + 90,
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [json.loads(line) for line in output.read_text().splitlines()]
    turns = [r for r in rows if "verdict" in r]
    assert [t["verdict"] for t in turns] == [verdict for _, verdict, _ in TURNS], turns
    assert turns[0]["citations"][0]["source_id"] == "billing/refunds.md"
    for turn in turns:
        assert turn["trace"]["duration_ms"] <= (TIMEOUT_S + 1) * 1000, turn["trace"]["notes"]
        assert "knowledge base" not in turn["answer"]
    assert sum(t["trace"]["llm_calls"] for t in turns) >= 1  # the model path was taken
    if process == "hierarchical":  # the model manages, and the trace shows what it chose
        for turn in turns:
            [manage] = [s["detail"] for s in turn["trace"]["steps"] if s["name"] == "manage"]
            assert manage["manager"].startswith("model: ") and "smollm2" in manage["manager"]
            # what it picked (kept or refused), or why the table picked instead
            notes = " ".join(turn["trace"]["notes"])
            assert (
                manage["picks"]
                or (not manage["completed"] and manage["why"])
                or "the model could not choose" in notes
                or "the manager's time ran out" in notes
            ), (manage, notes)
    # start-up (models, engine, the structured-output probe) plus the turns: no wait at exit
    # for abandoned requests
    assert elapsed < 60 + len(TURNS) * (TIMEOUT_S + 1)
