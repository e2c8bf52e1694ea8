"""Per-key and per-visitor rate limits of the pilot, counted in Qdrant so every worker shares
them.

The `limits` library does the arithmetic (its ``"30/minute"`` notation and fixed windows);
:class:`QdrantCounters` is its storage: one point per key and window, each increment a
compare-and-set on the point's revision (:mod:`storage.qdrant.revisions`), so two workers
never both spend the last unit, and an increment another worker built on is never counted
again. Over the embedded store, which one process owns, a count is one write: the process
knows what it wrote. A request over a limit gets 429 with
``Retry-After``.

Usage::

    limiter = RateLimits(store, encoders, settings.pilot)
    limiter.spend("sessions", who)              # ApiError 429 when over
    limiter.spend("message_bytes", who, cost=len(text.encode()))

Counters are kept per tenant and key name: two tenants may name a key alike. A publishable
(widget) key serves every visitor of a site, so each of its visitors is counted apart too,
under ``pilot.visitor_limits``: per session token and per client address (the connection's,
or the one a trusted proxy forwards). A visitor over its limit is refused before the key's
budget is touched: one visitor cannot spend the site's day. A key's own ``limits`` replace
``pilot.limits`` for it (a widget key sized for its site).
"""

from __future__ import annotations

import json
import math
import random
import re
import threading
import time
import uuid
import weakref
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import NoReturn, TypeVar

from limits import RateLimitItem, parse
from limits.storage import Storage
from limits.strategies import FixedWindowRateLimiter

from config.settings import PilotSettings
from service.auth import Caller
from service.errors import ApiError
from service.metrics import record_refusal
from service.stores.key_budget import COUNTER, BudgetLevel, Change, Counted, KeyBudget, StoredCounter
from storage.kb.embeddings import Encoders
from storage.qdrant.revisions import expected, landed, revised
from storage.qdrant.store import Match, PointData, Store, ensure_records
from storage.records import parsed

COUNTERS = "pilot_rate_counters"
T = TypeVar("T")


def expiry_hour(expires_at: float) -> str:
    """The keyword a counter is deleted by once its hour has passed.

    >>> expiry_hour(7200.5)
    '2'
    """
    return str(int(expires_at // 3600))


_NAMESPACE = uuid.UUID("2f0c7d1e-9a4b-4e8f-b6d3-5c1a7e9f0b24")
MAX_TRIES = 16  # compare-and-set attempts against other workers before a counter gives up
LOCK_STRIPES = 64  # this process's increments of one key wait in line instead of racing
HOURS_BACK = 48  # the minute sweep deletes counters that expired in this many past hours
WHAT = {
    "sessions": "new sessions",
    "handoffs": "hand-offs to a person",
    "message_bytes": "bytes of messages",
    "turns": "messages answered",
    "searches": "searches",
    "feedback": "ratings",
    "reads": "reads of its session",
}
KEY_LIMITS = ("sessions", "handoffs", "message_bytes", "turns", "searches", "feedback")


@dataclass
class _InThisProcess:
    """What every :class:`QdrantCounters` of this process over one store shares: the locks
    its increments of a key wait on and, where the store has one writer (the embedded
    store's lock), the records read or written so far: a count then costs one write, with
    no read before it and no read back after it."""

    stripes: list[threading.Lock]
    known: dict[str, StoredCounter | None] | None


_BY_STORE: weakref.WeakKeyDictionary[Store, _InThisProcess] = weakref.WeakKeyDictionary()
_BY_STORE_LOCK = threading.Lock()


def _shared_by_this_process(store: Store) -> _InThisProcess:
    with _BY_STORE_LOCK:
        if store not in _BY_STORE:
            _BY_STORE[store] = _InThisProcess(
                [threading.Lock() for _ in range(LOCK_STRIPES)], {} if store.one_process else None
            )
        return _BY_STORE[store]


class QdrantCounters(Storage):
    """A `limits` storage in a Qdrant collection: ``incr`` is atomic across workers."""

    STORAGE_SCHEME: list[str] | None = ["supportcrew+qdrant"]  # noqa: RUF012 (limits API)

    def __init__(self, store: Store, encoders: Encoders) -> None:
        super().__init__()
        self.store = store
        self.vector = encoders.dense.encode(["rate counter"])[0].dense
        self._shared = _shared_by_this_process(store)
        self._stripes = self._shared.stripes
        ensure_records(store, COUNTERS, encoders.dense.dim, ("key", "expires_hour"))
        store.add_keyword_index(COUNTERS, "expires_hour")  # stores made before counters expired

    @property
    def base_exceptions(self) -> type[Exception] | tuple[type[Exception], ...]:
        return RuntimeError

    def _point(self, key: str, payload: Mapping[str, object]) -> PointData:
        return PointData(id=str(uuid.uuid5(_NAMESPACE, key)), dense=self.vector, payload=dict(payload))

    def read(self, key: str) -> StoredCounter | None:
        """The record ``key`` as stored (a count or a budget; None: none)."""
        if (known := self._shared.known) is not None and key in known:
            return known[key]
        found = list(self.store.scroll(COUNTERS, Match("key", (key,))))
        record = parsed(COUNTER, found[0].payload, f"{COUNTERS} {key}") if found else None
        if self._shared.known is not None:
            self._shared.known[key] = record
        return record

    def _read(self, key: str) -> StoredCounter | None:
        return self.read(key)

    def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        """Add ``amount``; the count now."""

        def counted(current: StoredCounter | None, now: float) -> tuple[Counted, int]:
            live = current if current is not None and current["expires_at"] > now else None
            count = amount + (live["count"] if live else 0)
            expires_at = live["expires_at"] if live else now + expiry
            return {"count": count, "expires_at": expires_at}, count

        return self.swap(key, counted)

    def swap(self, key: str, change: Change[T]) -> T:
        """One compare-and-set of the record ``key``: ``change(stored payload or None, now)``
        gives the fields to store (with their ``expires_at``; None: store nothing) and what
        to return. Only other workers race this process (its own swaps of the key queue on a
        lock); a lost race backs off a random while and reads again."""
        with self._stripes[zlib.crc32(key.encode()) % LOCK_STRIPES]:
            for attempt in range(MAX_TRIES):
                if attempt:
                    time.sleep(random.uniform(0.0, 0.001 * 2 ** min(attempt, 7)))
                now = time.time()
                current = self._read(key)
                fields, result = change(current, now)
                if fields is None:
                    return result
                hour = expiry_hour(float(fields["expires_at"]))
                written = revised(current, {**fields, "key": key, "expires_hour": hour})
                if self._shared.known is not None:  # no other writer: the write is the record
                    self.store.upsert(COUNTERS, [self._point(key, written)])
                    self._shared.known[key] = parsed(COUNTER, written, f"{COUNTERS} {key}")
                    return result
                if current is None:
                    self.store.insert_new(COUNTERS, [self._point(key, written)])
                else:
                    self.store.update_if(COUNTERS, self._point(key, written), expected(current))
                if landed(self._read(key), written):
                    return result
        raise RuntimeError(f"rate counter {key!r} is contended: try again")

    def get(self, key: str) -> int:
        current = self._read(key)
        return 0 if current is None or current["expires_at"] <= time.time() else current["count"]

    def get_expiry(self, key: str) -> float:
        current = self._read(key)
        return time.time() if current is None else float(current["expires_at"])

    def check(self) -> bool:
        return self.store.has_collection(COUNTERS)

    def reset(self) -> int | None:
        counted = self.store.count(COUNTERS)
        self.store.delete(
            COUNTERS, Match("key", tuple(r.payload["key"] for r in self.store.scroll(COUNTERS)))
        )
        self._forget_known()
        return counted

    def clear(self, key: str) -> None:
        self.store.delete(COUNTERS, Match("key", (key,)))
        if self._shared.known is not None:
            self._shared.known.pop(key, None)

    def _forget_known(self) -> None:
        """Records are read from the store again (after a delete by a filter)."""
        if self._shared.known is not None:
            self._shared.known = {}

    def forget_expired(self, now: float, everything: bool = False) -> None:
        """Delete the counters whose window ended before this hour (a window is at most a
        day: those of the last ``HOURS_BACK`` hours, by their indexed hour); ``everything``
        (at start, after the service was down longer) reads each counter's expiry instead,
        those stored before counters had an hour among them."""
        hour = int(now // 3600)
        gone = tuple(str(h) for h in range(hour - HOURS_BACK, hour))
        self.store.delete(COUNTERS, Match("expires_hour", gone))
        self._forget_known()
        if everything:
            stale = [
                r.payload["key"]
                for r in self.store.scroll(COUNTERS, fields=("key", "expires_at"))
                if float(r.payload.get("expires_at", 0.0)) <= now
            ]
            for start in range(0, len(stale), 256):
                self.store.delete(COUNTERS, Match("key", tuple(stale[start : start + 256])))


# the routes each limit counts: a key (or visitor) whose window is spent is refused there
# before its body is read (service/limits.py)
COUNTED_ROUTES = {
    "sessions": re.compile(r"/v1/(widget/)?sessions/?"),
    "message_bytes": re.compile(r"/v1/sessions/[^/]+/messages/?"),
    "turns": re.compile(r"/v1/sessions/[^/]+/messages/?"),
    "handoffs": re.compile(r"/v1/sessions/[^/]+/handoff/?"),
    "searches": re.compile(r"/v1/search/?"),
    "feedback": re.compile(r"/v1/sessions/[^/]+/feedback/?"),
    "reads": re.compile(r"/v1/widget/sessions/[^/]+/token/?"),
}


def counter_key(who: Caller) -> str:
    """Whose counters: the key's tenant and name (names are unique within a tenant only).

    >>> counter_key(Caller("widget", "acme")) != counter_key(Caller("widget", "globex"))
    True
    """
    return json.dumps([who.tenant, who.key_name])


def visitor_keys(who: Caller) -> list[tuple[str, str]]:
    """(what, counter key) of each visitor a publishable key's caller is: its session token
    and its client address (none for other keys).

    >>> [what for what, _ in visitor_keys(Caller("site", "acme", publishable=True,
    ...                                         session_id="s1", address="203.0.113.9"))]
    ['session', 'address']
    """
    if not who.publishable:
        return []
    found = [("session", who.session_id), ("address", who.address)]
    return [
        (what, json.dumps([who.tenant, who.key_name, what, value])) for what, value in found if value
    ]


class RateLimits:
    """The pilot's limits: per key (``pilot.limits``, or a key's own ``limits``) and, for a
    widget key, per visitor (``pilot.visitor_limits``)."""

    def __init__(self, store: Store, encoders: Encoders, pilot: PilotSettings) -> None:
        self.counters = QdrantCounters(store, encoders)
        self.limiter = FixedWindowRateLimiter(self.counters)
        self.budget = KeyBudget(self.counters, self.limiter, pilot)
        self.widgets = [k for k in pilot.api_keys if k.role == "widget"]
        self.items: dict[str, RateLimitItem] = {
            name: parse(getattr(pilot.limits, name)) for name in KEY_LIMITS
        }
        self.visitor_items: dict[str, RateLimitItem] = {
            name: parse(getattr(pilot.visitor_limits, name)) for name in WHAT
        }
        self.own: dict[str, dict[str, RateLimitItem]] = {
            counter_key(Caller(k.name, k.tenant)): {n: parse(r) for n, r in k.limits.items()}
            for k in pilot.api_keys
            if k.limits
        }
        # windows this worker saw spent (limit, counter key), until they reset: a flood's
        # further requests are refused without a store round trip (another worker learns it on
        # its next count)
        self.spent_until: dict[tuple[str, str], float] = {}

    def _counters(self, name: str, who: Caller) -> list[tuple[str, str, RateLimitItem]]:
        """(whose, counter key, limit) for ``name``: the caller's visitors first, then its key."""
        counted = [
            (what, key, self.visitor_items[name])
            for what, key in visitor_keys(who)
            if name in self.visitor_items
        ]
        mine = counter_key(who)
        item = self.own.get(mine, {}).get(name) or self.items.get(name)
        if item is not None:
            counted.append(("key", mine, item))
        return counted

    def forget_expired(self, now: float, everything: bool = False) -> None:
        """Counters whose window has ended are deleted, and this worker's memory of spent
        windows that have reset: a flood of addresses leaves nothing behind it."""
        self.counters.forget_expired(now, everything)
        self.spent_until = {k: until for k, until in self.spent_until.items() if until > now}

    def budget_levels(self, tenant: str | None, now: float) -> list[BudgetLevel]:
        """How much is left of each budget of the widget keys of ``tenant`` (None: every
        tenant's): what the lead's page and ``/metrics`` show."""
        rows = []
        for key in self.widgets:
            if tenant is not None and key.tenant != tenant:
                continue
            mine = counter_key(Caller(key.name, key.tenant))
            items = {n: self.own.get(mine, {}).get(n) or self.items[n] for n in KEY_LIMITS}
            rows += [
                replace(level, tenant=key.tenant)
                for level in self.budget.levels(mine, key.name, items, now)
            ]
        return rows

    def refuse_if_spent(self, name: str, who: Caller) -> None:
        """429 at once when this worker already saw a window of the caller's spent (no store
        call); call it first in a route, before the work that :meth:`spend` would count."""
        for whose, key, item in self._counters(name, who):
            if whose == "key" and who.publishable:  # a rolling budget: refills, newcomers' share
                continue
            until = self.spent_until.get((name, key), 0.0)
            if until > time.time():
                self._refuse(name, whose, item, until)

    def refuse_spent_route(self, path: str, who: Caller) -> None:
        """429 at once for a POST to a route whose limit this worker saw spent for the caller."""
        for name, route in COUNTED_ROUTES.items():
            if route.fullmatch(path):
                self.refuse_if_spent(name, who)

    def spend(self, name: str, who: Caller, cost: int = 1) -> None:
        """Count ``cost`` against the caller's ``name`` limits, its visitor's before its key's;
        429 with ``Retry-After`` at the first window spent (nothing of the request is stored,
        and a visitor refused spends nothing of its key's budget)."""
        self.refuse_if_spent(name, who)
        for whose, key, item in self._counters(name, who):
            if whose == "key" and who.publishable:
                wait = self.budget.spend(name, who, key, item, cost)
                if wait is not None:
                    self._refuse(name, "key", item, time.time() + wait, rolling=True)
                continue
            # the limit's name too: two limits of one rate (3/minute) never share a counter
            if self.limiter.hit(item, name, key, cost=cost):
                continue
            reset, _ = self.limiter.get_window_stats(item, name, key)
            self.spent_until[(name, key)] = reset
            self._refuse(name, whose, item, reset)

    def _refuse(
        self, name: str, whose: str, item: RateLimitItem, reset: float, rolling: bool = False
    ) -> NoReturn:
        record_refusal(name)
        wait = max(1, math.ceil(reset - time.time()))
        who = {"key": "this key has", "session": "this session has"}.get(whose, "this address has")
        if rolling:  # a widget key's budget, shared by its site's visitors; it refills
            who = "this site's visitors have"
        raise ApiError(
            429,
            "rate_limited",
            f"{who} used its {WHAT[name]} for now ({item}); try again in {wait} s",
            {"limit": name, "retry_after_s": wait, "per": whose},
            headers={"Retry-After": str(wait)},
        )
