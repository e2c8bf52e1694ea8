"""The hand-off queue's poll as the tenant's closed sessions pile up: the agent desk polls
``GET /v1/handoffs`` with ``If-None-Match`` (304 when nothing changed), and the idle sweep
looks for sessions to remember, at 100 and at 10,000 closed sessions (half resolved, half
opened and never written to) beside 5 waiting ones.

Target (issue 37): the poll's p50 at 10,000 closed sessions within 1.5x of the poll at 100.
The reference (``BEFORE``) is this script run on main fb4877b, where the queue and the sweep
scrolled every session of the tenant: p50 3.8 ms at 100, 73.8 ms at 10,000 (19.6x).

    python -m bench.queue_poll [--closed 100,10000] [--polls 60]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from fastapi.testclient import TestClient

from bench._common import table, write_results
from config.settings import ApiKey, load_settings
from service.app import create_app
from service.auth import hash_key
from service.idle_sessions import close_idle_sessions
from service.stores.pilot_store import SESSIONS, PilotStore
from storage.kb.ingest import ingest_paths
from storage.kb.knowledge_base import KnowledgeBase
from storage.memory import Scope

ROOT = Path(__file__).resolve().parent.parent
TENANT = "acme"
WAITING = 5
BATCH = 500
STAFF = {"Authorization": "Bearer desk-key"}
# this script on main fb4877b (30 polls a size), poll p50 and idle sweep in ms
BEFORE = {100: {"poll_p50_ms": 3.77, "sweep_ms": 1.4}, 10000: {"poll_p50_ms": 73.84, "sweep_ms": 62.5}}


def add_closed(store: PilotStore, count: int) -> None:
    """``count`` closed sessions written straight to the store: half resolved, half opened
    and never written to (as the pilot leaves them), in batches."""
    now = time.time()
    points = []
    for number in range(count):
        session_id = uuid.uuid4().hex
        header = {
            "session_id": session_id,
            "tenant": TENANT,
            "customer_id": f"c-{session_id[:8]}",
            "owner": "bench",
            "slots": {},
            "created": now - 7200,
            "handoff": False,
            "rev": 1,
        }
        if number % 2:
            header |= {"status": "resolved", "resolved_at": now - 3600, "memory_written_at": now}
        else:  # opened, never written to: nothing for the sweep to remember
            header |= {"status": "open", "memory_written_at": now - 7200}
        points.append(store._point(f"{TENANT}/{session_id}", "session", header))
        if len(points) == BATCH:
            store.store.upsert(SESSIONS, points)
            points = []
    if points:
        store.store.upsert(SESSIONS, points)


def measure(client: TestClient, app_pilot: object, polls: int) -> dict[str, float]:
    first = client.get("/v1/handoffs", headers=STAFF)
    assert first.status_code == 200 and first.json()["total"] == WAITING, first.text
    etag = first.headers["etag"]
    times = []
    for _ in range(polls):
        started = time.perf_counter()
        response = client.get("/v1/handoffs", headers={**STAFF, "If-None-Match": etag})
        times.append(time.perf_counter() - started)
        assert response.status_code == 304
    started = time.perf_counter()
    close_idle_sessions(app_pilot)
    sweep = time.perf_counter() - started
    times.sort()
    return {
        "poll_p50_ms": round(statistics.median(times) * 1000, 2),
        "poll_p95_ms": round(times[int(0.95 * (len(times) - 1))] * 1000, 2),
        "sweep_ms": round(sweep * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--closed", default="100,10000", help="closed-session counts, rising")
    parser.add_argument("--polls", type=int, default=60)
    args = parser.parse_args()
    sizes = [int(n) for n in args.closed.split(",")]
    key = ApiKey(name="desk", sha256=hash_key("desk-key"), tenant=TENANT, role="agent")
    base = load_settings()
    settings = base.model_copy(update={"pilot": base.pilot.model_copy(update={"api_keys": [key]})})
    rows, data = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        kb = KnowledgeBase.open(settings, Path(tmp))
        ingest_paths(kb, [ROOT / "examples" / "kb"])
        kb.close()
        with TestClient(create_app(settings, Path(tmp))) as client:
            pilot = client.app.state.pilot  # type: ignore[attr-defined]
            for number in range(WAITING):
                session = f"waiting-{number}"
                pilot.store.create_session(TENANT, session, f"c-w{number}", "bench", {})
                pilot.runtime.memory.claim_turn(
                    Scope(f"c-w{number}", TENANT), session, {"user": "a person please"}
                )
                pilot.store.mark_handoff(TENANT, session, "bench")
            present = 0
            for size in sizes:
                add_closed(pilot.store, size - present)
                present = size
                data[size] = measure(client, pilot, args.polls)
                before = BEFORE.get(size, {})
                rows.append(
                    (
                        size,
                        *data[size].values(),
                        before.get("poll_p50_ms", "-"),
                        before.get("sweep_ms", "-"),
                    )
                )
    ratio = data[sizes[-1]]["poll_p50_ms"] / data[sizes[0]]["poll_p50_ms"]
    lines = [
        "# Hand-off queue poll against closed sessions",
        "",
        f"{WAITING} sessions waiting; `GET /v1/handoffs` with `If-None-Match` (304), "
        f"{args.polls} polls per size, in-process (TestClient); the idle sweep timed once.",
        "",
        *table(
            (
                "closed sessions",
                "poll p50 ms",
                "poll p95 ms",
                "idle sweep ms",
                "before: poll p50 ms",
                "before: idle sweep ms",
            ),
            rows,
        ),
        "",
        f"poll p50 at {sizes[-1]:,} / at {sizes[0]:,}: **{ratio:.2f}x** (target <= 1.5x)",
    ]
    write_results("queue_poll", lines, {"sizes": data, "ratio_p50": round(ratio, 3)})


if __name__ == "__main__":
    main()
