"""Load the pilot service on loopback: N concurrent clients x M turns, plus /v1/search.

Starts ``python main.py serve`` on 127.0.0.1 (a free port, two tenants' keys in the
environment), runs a bounded load, and checks that no response ever carried another session's
or tenant's data. Stops by itself.

    python -m bench.service [--clients 20] [--turns 5] [--searches 200] [--data-dir DIR]
                            [--baseline-repo DIR] [--rounds 2]

With ``--baseline-repo`` (a checkout of an earlier main) the same load runs against that
checkout's own ``main.py serve`` in the same run, side by side, with ratios: each checkout
``--rounds`` times, the order alternated, each figure the median of its rounds. RSS is the
server's resident memory after a warm-up turn per question, and its growth over the load.

Writes bench/results/service.{json,md}.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import shutil
import statistics
import time
from pathlib import Path

import httpx

from bench._common import ROOT, SERVICE_QUESTIONS, comparison_parser, serving, table
from evaluation.answers import percentile
from service.auth import hash_key

QUESTIONS = SERVICE_QUESTIONS


def client_run(base: str, key: str, client: int, turns: int) -> dict:
    headers = {"Authorization": f"Bearer {key}"}
    latencies, errors, leaks, answered = [], 0, 0, 0
    with httpx.Client(base_url=base, headers=headers, timeout=300) as http:
        session = http.post("/v1/sessions", json={}).json()["session_id"]
        for turn in range(turns):
            marker = f"ORD-{client:02d}{turn:03d}"
            started = time.perf_counter()
            response = http.post(
                f"/v1/sessions/{session}/messages",
                json={"message": f"{QUESTIONS[(client + turn) % len(QUESTIONS)]} (order {marker})"},
            )
            latencies.append(time.perf_counter() - started)
            if response.status_code != 200:
                errors += 1
                continue
            body = response.json()
            leaks += body["session_id"] != session
            answered += body.get("verdict") == "answered"
        stored = http.get(f"/v1/sessions/{session}").json()
        users = [t["user"] for t in stored["turns"]]
        leaks += sum(1 for u in users if f"ORD-{client:02d}" not in u)
    return {
        "session": session,
        "latencies": latencies,
        "errors": errors,
        "leaks": leaks,
        "answered": answered,
    }


def rss_mb(pid: int) -> float:
    """The resident memory of a process (Linux /proc), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def load(repo: Path, args: argparse.Namespace) -> dict:
    """Serve ``repo``'s own ``main.py`` and put the bounded load on it."""
    keys = [
        {
            "name": "acme",
            "sha256": hash_key("acme-key"),
            "tenant": "acme",
            "slots": {"access_level": "customer", "tier": "pro"},
        },
        {
            "name": "globex",
            "sha256": hash_key("globex-key"),
            "tenant": "globex",
            "slots": {"access_level": "public"},
        },
    ]
    data_dir = args.data_dir / repo.name
    # a fresh store each run: conversations left by an earlier run would be measured too
    shutil.rmtree(data_dir, ignore_errors=True)
    with serving(repo, data_dir, keys) as (base, pid):
        client_run(base, "acme-key", 99, len(QUESTIONS))  # warm-up: every question once
        rss_warm = rss_mb(pid)

        started = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.clients) as pool:
            runs = list(
                pool.map(
                    lambda c: client_run(
                        base, "acme-key" if c % 2 == 0 else "globex-key", c, args.turns
                    ),
                    range(args.clients),
                )
            )
        turn_seconds = time.perf_counter() - started
        rss_after = rss_mb(pid)
        latencies = [x for r in runs for x in r["latencies"]]

        cross = 0
        for index, run in enumerate(runs):
            other = "globex-key" if index % 2 == 0 else "acme-key"
            response = httpx.get(
                f"{base}/v1/sessions/{run['session']}",
                headers={"Authorization": f"Bearer {other}"},
                timeout=30,
            )
            cross += response.status_code != 404

        search_latencies, search_errors = [], 0
        started = time.perf_counter()
        with httpx.Client(
            base_url=base, headers={"Authorization": "Bearer acme-key"}, timeout=30
        ) as http:
            for i in range(args.searches):
                t0 = time.perf_counter()
                response = http.post("/v1/search", json={"query": QUESTIONS[i % 4]})
                search_latencies.append(time.perf_counter() - t0)
                search_errors += response.status_code != 200
        search_seconds = time.perf_counter() - started
    return {
        "turns": len(latencies),
        "turns_answered": sum(r["answered"] for r in runs),
        "turns_per_second": round(len(latencies) / turn_seconds, 2),
        "turn_p50_s": round(percentile(latencies, 0.5), 2),
        "turn_p95_s": round(percentile(latencies, 0.95), 2),
        "turn_errors": sum(r["errors"] for r in runs),
        "session_or_tenant_leaks": sum(r["leaks"] for r in runs) + cross,
        "rss_after_warm_up_mb": rss_warm,
        "rss_growth_mb": round(rss_after - rss_warm, 1),
        "search_rps": round(args.searches / search_seconds, 1),
        "search_p50_ms": round(percentile(search_latencies, 0.5) * 1000, 1),
        "search_p95_ms": round(percentile(search_latencies, 0.95) * 1000, 1),
        "search_errors": search_errors,
    }


def median_run(runs: list[dict]) -> dict:
    """Each measure's median over ``runs`` (the loads of one checkout).

    >>> median_run([{"turns": 100, "turns_per_second": 4.0}, {"turns": 100, "turns_per_second": 6.0}])
    {'turns': 100, 'turns_per_second': 5.0}
    """
    medians = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    return {
        k: int(v) if v == int(v) and isinstance(runs[0][k], int) else round(v, 2)
        for k, v in medians.items()
    }


def main() -> None:
    parser = comparison_parser(__doc__, "/tmp/supportcrew-service-bench")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument(
        "--rounds", type=int, default=2, help="loads per checkout, alternated; medians reported"
    )
    args = parser.parse_args()
    bounded = (
        1 <= args.clients <= 32
        and 1 <= args.turns <= 20
        and 1 <= args.searches <= 5000
        and 1 <= args.rounds <= 5
    )
    if not bounded:
        parser.error("keep the load bounded: clients <= 32, turns <= 20, searches <= 5000, rounds <= 5")
    repos = {"now": ROOT} | ({"before": args.baseline_repo.resolve()} if args.baseline_repo else {})
    runs: dict[str, list[dict]] = {name: [] for name in repos}
    for round_ in range(args.rounds):  # alternated: a machine that speeds up or slows down
        for name in list(repos)[:: 1 if round_ % 2 == 0 else -1]:  # favours neither side
            runs[name].append(load(repos[name], args))
    ours = median_run(runs["now"])
    before = median_run(runs["before"]) if "before" in runs else None
    result = {
        "clients": args.clients,
        "turns_per_client": args.turns,
        "rounds": args.rounds,
        "now": ours,
        "before": before,
    }
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "service.json").write_text(json.dumps(result, indent=2) + "\n")
    columns = ["measure", "now"] + (["before", "now / before"] if before else [])
    rows = []
    for name, value in ours.items():
        row = [name, value]
        if before:
            old = before[name]
            row += [old, round(value / old, 2) if old else "-"]
        rows.append(row)
    lines = [
        f"# Pilot service on loopback: {args.clients} clients x {args.turns} messages "
        "(local defaults, embedded Qdrant, 2 cores)",
        "",
        f"Each checkout loaded {args.rounds} times, alternated; each figure is its median.",
        "",
        *table(columns, rows),
    ]
    (out / "service.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
