"""The pilot's start over a data dir that already holds conversations: its memory and time.

For each N, a fresh data dir gets the example KB (``main.py ingest``) and N conversations of
one tenant written straight into its store the way the pilot stores them (a session header,
its turns, every fifth handed off, every seventh a helpful mark: ``bench.outcome_report``, run
by the measured checkout's own code), each header then as a store that lived holds it (no
legacy hand-off flag, its memory written when it went quiet), none with a stored outcome yet
(a store older than outcomes). Then ``main.py serve`` starts over it three times: the first
start labels what it finds unlabelled, the next ones find everything labelled (after a clean
stop they do not look). Each start is timed to ``/readyz`` and to settled (the server's CPU
quiet for a second, at most 240 s), and its resident memory read then (VmRSS, its own part
RssAnon and the files mapped in RssFile, and VmHWM: the peak). Memory at start should not
grow with N.

    python -m bench.pilot_start [--conversations 0,10000,100000] [--baseline-repo DIR]

With ``--baseline-repo`` (an earlier checkout) the same starts run that checkout's own
``main.py serve`` over the same kind of data dir, side by side.

Writes bench/results/pilot_start.{md,json}.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench._common import ROOT, comparison_parser, serving, table, write_results
from service.auth import hash_key

SETTLE_TIMEOUT_S = 240.0  # a first start over 100,000 conversations labels them for minutes
KEYS = [{"name": "acme", "sha256": hash_key("acme-key"), "tenant": "acme", "slots": {}}]


def status_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# run by the measured checkout's own code: its stores create their collections their way
POPULATE = """
import sys, time
from pathlib import Path
from bench.outcome_report import record
from config.settings import load_settings
from service.stores.pilot_store import SESSIONS, PilotStore
from storage.kb.knowledge_base import KnowledgeBase
from storage.memory import MemoryStore

kb = KnowledgeBase.open(load_settings(), Path(sys.argv[2]))
PilotStore(kb.store, kb.encoders)
MemoryStore(kb.store, kb.encoders).ensure()
vector = kb.encoders.dense.encode(["session"])[0].dense
now = time.time()
record(kb.store, vector, int(sys.argv[1]), now)
# as a store that lived holds them: no legacy hand-off flag, each memory written when it went
# quiet (else the first start migrates every header and the idle sweep writes every memory)
from storage.qdrant.store import PointData
lived = []
for found in kb.store.scroll(SESSIONS):
    payload = {k: v for k, v in found.payload.items() if k != "handoff"}
    payload["memory_written_at"] = payload["created"] + 600
    lived.append(PointData(id=found.id, dense=vector, payload=payload))
    if len(lived) == 2000:
        kb.store.upsert(SESSIONS, lived)
        lived = []
kb.store.upsert(SESSIONS, lived)
kb.close()
"""


def populate(repo: Path, data_dir: Path, count: int) -> float:
    """The example KB ingested by ``repo``, then ``count`` conversations written by its code;
    seconds to write them."""
    shutil.rmtree(data_dir, ignore_errors=True)
    subprocess.run(
        [sys.executable, "main.py", "--data-dir", str(data_dir), "ingest", "examples/kb"],
        cwd=repo,
        check=True,
        capture_output=True,
    )
    started = time.perf_counter()
    if count:
        subprocess.run(
            [sys.executable, "-c", POPULATE, str(count), str(data_dir)],
            cwd=repo,
            check=True,
            capture_output=True,
        )
    return time.perf_counter() - started


def start(repo: Path, data_dir: Path) -> dict[str, float]:
    """One start of ``repo``'s server over ``data_dir``: seconds to ready and to settled, RSS."""
    started = time.perf_counter()
    with serving(repo, data_dir, KEYS, ingest=False) as (_, pid):
        ready = time.perf_counter() - started
        rss_ready = status_mb(pid, "VmRSS")
        used = cpu_s(pid)
        while time.perf_counter() - started < SETTLE_TIMEOUT_S:
            time.sleep(1.0)
            now_used = cpu_s(pid)
            if now_used - used < 0.05:
                break
            used = now_used
        settled = time.perf_counter() - started
        return {
            "ready_s": round(ready, 1),
            "settled_s": round(settled, 1),
            "rss_ready_mb": rss_ready,
            "rss_settled_mb": status_mb(pid, "VmRSS"),
            # the process's own memory, and the store's files mapped in (page cache the
            # kernel takes back under pressure: the WAL's last segments, the indexes' pages)
            "anon_settled_mb": status_mb(pid, "RssAnon"),
            "file_settled_mb": status_mb(pid, "RssFile"),
            "rss_peak_mb": status_mb(pid, "VmHWM"),
            "cpu_s": round(cpu_s(pid), 1),
        }


def measure(repo: Path, data_dir: Path, count: int) -> dict[str, object]:
    written = populate(repo, data_dir, count)
    first = start(repo, data_dir)
    second = start(repo, data_dir)
    third = start(repo, data_dir)
    shutil.rmtree(data_dir, ignore_errors=True)
    return {
        "conversations": count,
        "write_s": round(written, 1),
        "first": first,
        "second": second,
        "third": third,
    }


def main() -> None:
    parser = comparison_parser(__doc__, "/tmp/supportcrew-start-bench")
    parser.add_argument("--conversations", default="0,10000,100000")
    args = parser.parse_args()
    counts = [int(n) for n in args.conversations.split(",")]
    if not all(0 <= n <= 100_000 for n in counts):
        parser.error("keep it short: at most 100,000 conversations")
    repos = [("now", ROOT)]
    if args.baseline_repo:
        repos.append(("before", args.baseline_repo.resolve()))
    runs = []
    for count in counts:  # side by side per N: the same machine load for both
        for name, repo in repos:
            runs.append({"code": name, **measure(repo, args.data_dir / name, count)})
    columns = ["code", "conversations", "start", *runs[0]["first"]]  # type: ignore[misc]
    rows = [
        [run["code"], run["conversations"], which, *run[which].values()]  # type: ignore[attr-defined]
        for run in runs
        for which in ("first", "second", "third")
    ]
    lines = [
        "# The pilot's start over stored conversations (embedded Qdrant, 2 shared cores)",
        "",
        "Target (issue 51): memory at start flat in the number of stored conversations.",
        "`first`: a store none of whose conversations has a stored outcome; `second` and",
        "`third`: the next starts over the same store.",
        "Settled: the server's CPU quiet for a second (at most 240 s).",
        *([f"`before`: the checkout at {args.baseline_repo}."] if args.baseline_repo else []),
        "",
        *table(columns, rows),
        "",
    ]
    write_results("pilot_start", lines, runs)


if __name__ == "__main__":
    main()
