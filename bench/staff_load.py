"""The staff side under load, with and without a flood from one key.

For ``--seconds`` (120 by default) against ``python main.py serve``: ``--customers`` web
visitors (one shared widget key) each hold conversations of a few questions, one in three
asking for a person; three agents work the queue (a page, take the oldest free conversation,
read it, reply, resolve); an admin polls the gap report. The same run is repeated with a
flood beside it, from a process of its own: a second customer key creating sessions, handing
them off and sending 8,000 character messages as fast as it can. Measured per role: p50/p95
seconds, errors (5xx or an unexpected status), the flood's 429s, and whether every accepted
customer message is stored.

Every client leaves from an address of its own on the loopback network (each customer,
agent and the admin one each; the flood 127.0.0.2), as people on the internet do. With
``--through-nginx`` the service sits behind Debian's nginx running the shipped site file
(deploy/nginx/supportcrew.conf: per-address request limits, body cap, SSE unbuffered), so a
flood from one address is refused at the ingress, as a deployment would refuse it.

    python -m bench.staff_load [--seconds 120] [--customers 20] [--through-nginx]

Writes bench/results/staff_load.{md,json} (staff_load_nginx.* through nginx).
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import httpx

from bench._common import ROOT, SERVICE_QUESTIONS, free_port, serving, table, write_results
from deploy.nginx_local import nginx_in_front
from evaluation.answers import percentile
from service.auth import hash_key

KEYS = [
    {
        "name": "widget",
        "sha256": hash_key("widget-key"),
        "tenant": "acme",
        "slots": {"access_level": "customer", "tier": "pro"},
    },
    {
        "name": "flood",
        "sha256": hash_key("flood-key"),
        "tenant": "acme",
        "slots": {"access_level": "public"},
    },
    *(
        {
            "name": name,
            "sha256": hash_key(f"{name}-key"),
            "tenant": "acme",
            "role": "agent",
            "slots": {"access_level": "internal"},
        }
        for name in ("ana", "ben", "cai")
    ),
    {
        "name": "lead",
        "sha256": hash_key("lead-key"),
        "tenant": "acme",
        "role": "admin",
        "slots": {"access_level": "internal"},
    },
]
FLOOD_THREADS = 4
FLOOD_ADDRESS = "127.0.0.2"
ADMIN_ADDRESS = "127.0.3.1"
CHECK_ADDRESS = "127.0.4.1"
THINK_S = 3.0
ASK_FOR_PERSON = "I want to talk to a person about my invoice"
QUESTIONS = SERVICE_QUESTIONS


class Tally:
    """Latencies and outcomes per role, shared by the threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.status: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
        self.sent: dict[str, int] = defaultdict(int)  # session -> customer messages accepted

    def call(self, role: str, http: httpx.Client, method: str, path: str, **kwargs):
        started = time.perf_counter()
        response = http.request(method, path, **kwargs)
        with self.lock:
            self.latencies[role].append(time.perf_counter() - started)
            self.status[role][response.status_code] += 1
        return response


def client(base: str, key: str, address: str, timeout: float = 60) -> httpx.Client:
    """A client of ``key`` whose requests leave from ``address``."""
    return httpx.Client(
        base_url=base,
        headers={"Authorization": f"Bearer {key}"},
        timeout=timeout,
        transport=httpx.HTTPTransport(local_address=address),
    )


def customer(base: str, n: int, until: float, tally: Tally) -> None:
    with client(base, "widget-key", f"127.0.1.{n + 1}") as http:
        conversation = 0
        while time.time() < until:
            made = tally.call("customer", http, "POST", "/v1/sessions", json={})
            if made.status_code != 201:
                time.sleep(1)
                continue
            session = made.json()["session_id"]
            questions = [QUESTIONS[(n + conversation + i) % len(QUESTIONS)] for i in range(3)]
            if (n + conversation) % 3 == 0:
                questions[1] = ASK_FOR_PERSON
            for question in questions:
                if time.time() >= until:
                    break
                sent = tally.call(
                    "customer",
                    http,
                    "POST",
                    f"/v1/sessions/{session}/messages",
                    json={"message": question},
                )
                if sent.status_code == 200:
                    with tally.lock:
                        tally.sent[session] += 1
                time.sleep(THINK_S)  # a person reads the answer and types the next
            conversation += 1


def agent(base: str, name: str, until: float, tally: Tally) -> None:
    with client(base, f"{name}-key", f"127.0.2.{1 + ('ana', 'ben', 'cai').index(name)}") as http:
        while time.time() < until:
            page = tally.call("agent", http, "GET", "/v1/handoffs?limit=20").json()
            free = [r for r in page.get("handoffs", []) if not r["session"].get("taken_by")]
            if not free:
                time.sleep(2)
                continue
            session = free[0]["session"]["session_id"]
            if tally.call("agent", http, "POST", f"/v1/handoffs/{session}/take").status_code != 200:
                continue  # another agent was faster: a 409 is the expected answer
            tally.call("agent", http, "GET", f"/v1/handoffs/{session}")
            tally.call(
                "agent",
                http,
                "POST",
                f"/v1/sessions/{session}/agent-messages",
                json={"message": f"Hi, this is {name}. Let me check that."},
            )
            time.sleep(1.0)
            tally.call(
                "agent",
                http,
                "POST",
                f"/v1/sessions/{session}/resolve",
                json={"note": f"handled by {name}"},
            )


def admin(base: str, until: float, tally: Tally) -> None:
    with client(base, "lead-key", ADMIN_ADDRESS) as http:
        while time.time() < until:
            tally.call("admin", http, "GET", "/v1/reports/gaps?since=1d")
            time.sleep(5)


def flood(base: str, until: float, tally: Tally) -> None:
    with client(base, "flood-key", FLOOD_ADDRESS) as http:
        while time.time() < until:
            made = tally.call("flood", http, "POST", "/v1/sessions", json={})
            if made.status_code == 201:
                session = made.json()["session_id"]
                tally.call("flood", http, "POST", f"/v1/sessions/{session}/handoff", json={})
                for _ in range(25):
                    tally.call(
                        "flood",
                        http,
                        "POST",
                        f"/v1/sessions/{session}/messages",
                        json={"message": "spam " * 1600},
                    )
            else:
                time.sleep(0.05)


def flood_process(base: str, until: float, out: multiprocessing.Queue, nice: int) -> None:
    """The flood in a process of its own, as an attacker is: its threads never hold the
    measuring process's GIL. At ``nice`` > 0 its own CPU yields to the service's, as an
    attacker's machine is not the service's (here both share two cores). Sends back its
    latencies and statuses."""
    os.nice(nice)
    tally = Tally()
    threads = [threading.Thread(target=flood, args=(base, until, tally)) for _ in range(FLOOD_THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    out.put((tally.latencies["flood"], dict(tally.status["flood"])))


@contextlib.contextmanager
def service(through_nginx: bool) -> Iterator[str]:
    """The service's base URL: ``main.py serve`` itself, or nginx in front of it."""
    with tempfile.TemporaryDirectory() as tmp, serving(ROOT, Path(tmp) / "data", KEYS) as (base, _pid):
        if not through_nginx:
            yield base
            return
        with nginx_in_front([int(base.rsplit(":", 1)[1])], free_port()) as proxied:
            yield proxied


def stored_user_turns(http: httpx.Client, session: str) -> int:
    """Customer messages stored in ``session`` (waiting out a per-address limit)."""
    for _ in range(40):
        read = http.get(f"/v1/sessions/{session}")
        if read.status_code != 429:
            return sum(1 for t in read.json()["turns"] if t.get("user"))
        time.sleep(0.25)
    raise RuntimeError(f"session {session} could not be read: still 429")


def run(
    seconds: float, customers: int, with_flood: bool, through_nginx: bool, flood_nice: int = 0
) -> dict:
    tally = Tally()
    with service(through_nginx) as base:
        with client(
            base, "widget-key", CHECK_ADDRESS, timeout=120
        ) as http:  # warm-up: each question once
            session = http.post("/v1/sessions", json={}).json()["session_id"]
            for question in QUESTIONS:
                http.post(f"/v1/sessions/{session}/messages", json={"message": question})
        until = time.time() + seconds
        threads = [
            threading.Thread(target=customer, args=(base, n, until, tally)) for n in range(customers)
        ]
        threads += [
            threading.Thread(target=agent, args=(base, name, until, tally))
            for name in ("ana", "ben", "cai")
        ]
        threads.append(threading.Thread(target=admin, args=(base, until, tally)))
        spawn = multiprocessing.get_context("spawn")
        flooding, flooded = None, spawn.Queue()
        if with_flood:  # four threads of one key in another process, as fast as it is answered
            flooding = spawn.Process(target=flood_process, args=(base, until, flooded, flood_nice))
            flooding.start()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if flooding is not None:
            latencies, statuses = flooded.get(timeout=120)
            flooding.join()
            tally.latencies["flood"] = latencies
            for status, count in statuses.items():
                tally.status["flood"][status] = count
        lost = 0
        with client(base, "widget-key", CHECK_ADDRESS) as http:
            for session, sent in tally.sent.items():
                lost += max(0, sent - stored_user_turns(http, session))
    result: dict = {"lost_messages": lost}
    for role, latencies in sorted(tally.latencies.items()):
        statuses = dict(tally.status[role])
        result[role] = {
            "requests": len(latencies),
            "p50_s": round(percentile(latencies, 0.5), 3),
            "p95_s": round(percentile(latencies, 0.95), 3),
            "5xx": sum(v for k, v in statuses.items() if k >= 500),
            "429": statuses.get(429, 0),
            "statuses": statuses,
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--customers", type=int, default=20)
    parser.add_argument("--through-nginx", action="store_true", help="deploy/nginx in front")
    parser.add_argument(
        "--flood-nice",
        type=int,
        default=0,
        help="niceness of the flooding client (19: its CPU yields to the service's, as an "
        "attacker's own machine would)",
    )
    args = parser.parse_args()
    quiet = run(args.seconds, args.customers, with_flood=False, through_nginx=args.through_nginx)
    flooded = run(
        args.seconds,
        args.customers,
        with_flood=True,
        through_nginx=args.through_nginx,
        flood_nice=args.flood_nice,
    )
    rows = []
    for role in ("customer", "agent", "admin", "flood"):
        for measure in ("requests", "p50_s", "p95_s", "5xx", "429"):
            before = quiet.get(role, {}).get(measure, "-")
            after = flooded.get(role, {}).get(measure, "-")
            ratio = (
                round(after / before, 2)
                if isinstance(before, int | float) and before and isinstance(after, int | float)
                else "-"
            )
            rows.append([role, measure, before, after, ratio])
    rows.append(["all", "lost_messages", quiet["lost_messages"], flooded["lost_messages"], "-"])
    lines = [
        f"# Staff side under load: {args.customers} customers, 3 agents, 1 admin, "
        f"{args.seconds:.0f} s, without and with a flood from one key and address"
        + (", through nginx (deploy/nginx/supportcrew.conf)" if args.through_nginx else "")
        + (f"; the flooding client at nice {args.flood_nice}" if args.flood_nice else ""),
        "",
        *table(["role", "measure", "no flood", "flood", "flood / no flood"], rows),
    ]
    write_results(
        "staff_load_nginx" if args.through_nginx else "staff_load",
        lines,
        {
            "seconds": args.seconds,
            "customers": args.customers,
            "through_nginx": args.through_nginx,
            "flood_nice": args.flood_nice,
            "no_flood": quiet,
            "flood": flooded,
        },
    )


if __name__ == "__main__":
    main()
