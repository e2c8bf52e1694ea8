"""Where the local model's time goes: prompt and generation tokens/s of SmolLM2 (llama.cpp).

Phases, each on the same ~800-token support prompt, nothing else running in the process
unless the phase says so:

* ``plain``: prompt evaluation (cold cache) and 32 generated tokens, per weights file (the
  shipped Q4_1, and the Q8_0 re-encoding the product loads: agents/llm/model_file.py),
  thread count and batch size;
* ``grammar``: the same generation constrained by a role's JSON schema;
* ``prefix cached``: the same prompt again (llama.cpp keeps the evaluated prefix);
* ``alone`` and ``beside an ingest`` (another thread encodes with MiniLM: ONNX Runtime's
  thread pool next to llama.cpp's OpenMP threads), each in a fresh process per
  ``OMP_WAIT_POLICY`` (ACTIVE: idle OpenMP threads spin; PASSIVE: they sleep).

``llama-bench`` (llama.cpp's own tool) is not part of the llama-cpp-python wheel; its figures
for both GGUF files are printed when ``--llama-bench PATH`` points at a binary built from the
same llama.cpp (the ``vendor/llama.cpp`` of the llama-cpp-python sdist:
``cmake -B build -DGGML_NATIVE=OFF && cmake --build build --target llama-bench``).

    python -m bench.llm_speed [--threads 1,2] [--batches 512,64] [--llama-bench PATH]

Writes bench/results/llm_speed.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from agents.llm.model_file import local_gguf
from bench._common import ROOT, table, write_results
from config.settings import load_settings
from storage.kb.embeddings import load_encoders
from storage.kb.model_files import smollm2_gguf

PASSAGE = (
    "Once a refund is approved, the money is returned to the original payment method "
    "within 5 to 7 business days. Card issuers sometimes need up to 10 business days to "
    "show the credit on a statement. Refunds to PayPal usually arrive within 2 business "
    "days. "
)
GENERATE = 32


def prompt_tokens(llama: Any, target: int = 800) -> list[int]:
    text = "You are the responder of a support team. Answer from the passages.\n"
    while len(llama.tokenize(text.encode())) < target:
        text += PASSAGE
    return llama.tokenize(text.encode())[:target]


def timed_eval(llama: Any, tokens: list[int], grammar: Any = None) -> dict[str, float]:
    """Prompt evaluation, then GENERATE sampled tokens; tokens/s of each."""
    started = time.perf_counter()
    llama.eval(tokens)
    prompt_s = time.perf_counter() - started
    started = time.perf_counter()
    generated = 0
    for token in llama.generate([], temp=0.0, grammar=grammar, reset=False):
        generated += 1
        if generated >= GENERATE or token == llama.token_eos():
            break
    gen_s = time.perf_counter() - started
    return {
        "prompt_tok_s": round(len(tokens) / prompt_s, 1),
        "gen_tok_s": round(generated / gen_s, 1) if gen_s else 0.0,
        "prompt_s": round(prompt_s, 2),
    }


def load(weights: Path, threads: int, batch: int) -> Any:
    from llama_cpp import Llama

    return Llama(
        model_path=str(weights),
        n_ctx=2048,
        n_threads=threads,
        n_batch=batch,
        n_ubatch=batch,
        verbose=False,
        seed=7,
    )


def json_grammar() -> Any:
    from llama_cpp import LlamaGrammar

    schema = (
        '{"type": "object", "properties": {"verdict": {"type": "string", "enum": '
        '["sufficient", "insufficient"]}, "reason": {"type": "string", "maxLength": 80}}, '
        '"required": ["verdict", "reason"]}'
    )
    return LlamaGrammar.from_json_schema(schema, verbose=False)


def contention_rows(policy: str, weights: Path, best: dict[str, Any]) -> list[dict[str, Any]]:
    """Alone and beside an ingest, in a fresh process with ``OMP_WAIT_POLICY=policy`` (OpenMP
    reads it once, when llama.cpp's library loads)."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.llm_speed",
            "--contention",
            str(weights),
            str(best["threads"]),
            str(best["batch"]),
        ],
        env={**os.environ, "OMP_WAIT_POLICY": policy},
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    setting = {"weights": best["weights"], "threads": best["threads"], "batch": best["batch"]}
    return [
        {"phase": f"{name}, OMP_WAIT_POLICY={policy}", **setting, **figures}
        for name, figures in measured.items()
    ]


def measure_contention(weights: Path, threads: int, batch: int) -> dict[str, Any]:
    """The same prompt alone, then while another thread encodes with MiniLM (an ingest)."""
    llama = load(weights, threads, batch)
    tokens = prompt_tokens(llama)
    encoders = load_encoders(load_settings())
    encoders.dense.encode([PASSAGE] * 32)
    llama.reset()
    figures = {"alone (after an ONNX encode)": timed_eval(llama, tokens)}
    stop = threading.Event()

    def ingest() -> None:
        while not stop.is_set():
            encoders.dense.encode([PASSAGE] * 16)

    worker = threading.Thread(target=ingest)
    worker.start()
    llama.reset()
    try:
        figures["beside an ingest (ONNX in another thread)"] = timed_eval(llama, tokens)
    finally:
        stop.set()
        worker.join()
    return figures


def main() -> None:
    if sys.argv[1:2] == ["--contention"]:
        weights, threads, batch = sys.argv[2:5]
        print(json.dumps(measure_contention(Path(weights), int(threads), int(batch))))
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--batches", default="512,64")
    parser.add_argument("--llama-bench", default=shutil.which("llama-bench"))
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    files = {"Q4_1 (shipped)": smollm2_gguf(), "Q8_0 (loaded)": local_gguf()}
    for weights, path in files.items():
        for threads in (int(t) for t in args.threads.split(",")):
            for batch in (int(b) for b in args.batches.split(",")):
                llama = load(path, threads, batch)
                tokens = prompt_tokens(llama)
                setting = {"weights": weights, "threads": threads, "batch": batch}
                llama.reset()
                rows.append({"phase": "plain", **setting, **timed_eval(llama, tokens)})
                llama.reset()
                rows.append({"phase": "grammar", **setting, **timed_eval(llama, tokens, json_grammar())})
    best = max((r for r in rows if r["phase"] == "plain"), key=lambda r: r["prompt_tok_s"])
    llama = load(files[best["weights"]], best["threads"], best["batch"])
    tokens = prompt_tokens(llama)
    llama.reset()
    llama.eval(tokens[:-40])
    started = time.perf_counter()
    llama.eval(tokens[-40:])  # only the new suffix: the prefix stays evaluated
    rows.append(
        {
            "phase": "prefix cached (40 new tokens)",
            "weights": best["weights"],
            "threads": best["threads"],
            "batch": best["batch"],
            "prompt_s": round(time.perf_counter() - started, 3),
            "prompt_tok_s": round(40 / (time.perf_counter() - started), 1),
            "gen_tok_s": "",
        }
    )
    del llama
    for policy in ("ACTIVE", "PASSIVE"):
        rows.extend(contention_rows(policy, files[best["weights"]], best))
    reference = ""
    if args.llama_bench:
        done = subprocess.run(
            [
                args.llama_bench,
                "-m",
                str(smollm2_gguf()),
                "-m",
                str(local_gguf()),
                "-p",
                "800",
                "-n",
                str(GENERATE),
                "-t",
                args.threads,
                "-r",
                "3",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        reference = (done.stdout or done.stderr)[-2500:]
    columns = ("phase", "weights", "threads", "batch", "prompt_tok_s", "gen_tok_s", "prompt_s")
    lines = [
        "# Local model speed (SmolLM2-135M, llama-cpp-python)",
        "",
        f"Prompt of {len(tokens)} tokens; {GENERATE} generated tokens.",
        "",
        *table(columns, ((r.get(c, "") for c in columns) for r in rows)),
        "",
        "llama-bench: "
        + (
            f"\n```\n{reference}\n```"
            if reference
            else "not available (not shipped in the llama-cpp-python wheel)"
        ),
        "",
    ]
    write_results("llm_speed", lines, {"rows": rows, "llama_bench": reference})


if __name__ == "__main__":
    main()
