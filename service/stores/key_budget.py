"""A widget key's own budget: rolling, refilling, with a share kept for new visitors.

A publishable key serves every visitor of a site. Its limits (``pilot.limits``, or the key's
own) used to be fixed windows: a crowd of addresses, each within its visitor limits, spent a
day of message bytes in seconds and every new visitor got 429 until midnight. Now each of the
key's limits is a budget that refills continuously (a token bucket, GCRA: a day's bytes come
back at a day's rate, 1/86,400 of them a second), split in two:

* the **shared** budget, ``1 - pilot.widget_budget.reserve_share`` of it, any visitor spends;
* the **newcomers'** budget, the rest, drawn only once the shared one is spent, and only by an
  address that has drawn less than ``newcomer_share`` of its own visitor limit from the key
  today (shared or kept): a crowd that spent the shared budget cannot spend this one with the
  same addresses, and each fresh address it brings takes at most that allowance of it.

Each budget is one record in the rate-counter collection (its theoretical arrival time, a
compare-and-set per spend, shared by every worker; it expires once full again). The lead's
page and ``/metrics`` read how much of each is left (``levels``).

Usage::

    budget = KeyBudget(counters, limiter, settings.pilot)
    wait_s = budget.spend("message_bytes", who, counter_key(who), item, cost=420)  # None: ok
    budget.levels("acme", "site", {"message_bytes": item})   # [BudgetLevel(...), ...]
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, Required, TypeVar

from limits import RateLimitItem, parse
from pydantic import ConfigDict, TypeAdapter, with_config
from typing_extensions import TypedDict

from config.settings import PilotSettings

if TYPE_CHECKING:
    from limits.strategies import FixedWindowRateLimiter

    from service.auth import Caller

SHARES = ("shared", "newcomers")
T = TypeVar("T")


class Counted(TypedDict, total=False):
    """What a compare-and-set writes to a counter record: a rate window's ``count``, or a
    budget's theoretical arrival time ``tat`` (GCRA); either is gone after ``expires_at``."""

    count: int
    tat: float
    expires_at: Required[float]


@with_config(ConfigDict(extra="allow"))  # a field a newer version wrote is kept on rewrite
class StoredCounter(Counted, total=False):
    """A counter record as stored: what was counted, its key, the UTC hour it expires in
    (the sweep deletes by it; counters stored before it lack it) and its revisions
    (``storage.qdrant.revisions``)."""

    key: Required[str]
    expires_hour: str
    rev: str
    revs: list[str]


COUNTER: TypeAdapter[StoredCounter] = TypeAdapter(StoredCounter)
# what a swap does to a counter: (the record as stored or None, now) to (the fields to
# store, None to store nothing; what the swap returns)
Change = Callable[[StoredCounter | None, float], tuple[Counted | None, T]]


class Counters(Protocol):
    """Where the budgets are kept (``service.stores.rate_limits.QdrantCounters``)."""

    def swap(self, key: str, change: Change[T]) -> T: ...

    def read(self, key: str) -> StoredCounter | None: ...


@dataclass(frozen=True)
class Bucket:
    """A budget of ``capacity`` units that refills whole in ``period_s`` seconds."""

    capacity: float
    period_s: float

    def take(self, tat: float | None, cost: float, now: float) -> tuple[float | None, float]:
        """GCRA: the new theoretical arrival time after spending ``cost`` (None: refused) and
        the seconds until it would fit (0 when taken).

        >>> day = Bucket(capacity=100.0, period_s=100.0)
        >>> day.take(None, 60.0, now=0.0)
        (60.0, 0.0)
        >>> day.take(60.0, 60.0, now=0.0)      # 40 left: refused, 20 s until 60 fit
        (None, 20.0)
        >>> day.take(60.0, 60.0, now=20.0)     # 20 s later 20 more came back
        (120.0, 0.0)
        """
        start = max(tat or now, now)
        after = start + cost * self.period_s / self.capacity  # a unit takes period/capacity back
        over = after - now - self.period_s
        return (None, over) if over > 1e-9 else (after, 0.0)

    def left(self, tat: float | None, now: float) -> float:
        """The share of the budget left now (1.0: full).

        >>> Bucket(capacity=100.0, period_s=100.0).left(60.0, now=0.0)
        0.4
        """
        used = max(0.0, (tat or now) - now)
        return max(0.0, 1.0 - used / self.period_s)


@dataclass(frozen=True)
class BudgetLevel:
    """How much of one of a widget key's budgets is left (what the lead and /metrics show)."""

    key: str
    limit: str
    share: str  # "shared" or "newcomers"
    capacity: float  # units of it when full
    per_hour: float  # units that come back an hour
    left: float  # share left now, 0..1
    low: bool  # below ``pilot.widget_budget.low_below``
    tenant: str = ""


def period_of(item: RateLimitItem) -> float:
    return float(item.get_expiry())


class KeyBudget:
    """The rolling budgets of publishable (widget) keys, in the rate-counter collection."""

    def __init__(
        self, counters: Counters, limiter: FixedWindowRateLimiter, pilot: PilotSettings
    ) -> None:
        self.counters, self.limiter = counters, limiter
        self.settings = pilot.widget_budget
        self.visitor_amount = {
            name: parse(rate).amount for name, rate in pilot.visitor_limits.model_dump().items()
        }

    def buckets(self, item: RateLimitItem) -> dict[str, Bucket]:
        """The shared and the newcomers' share of a key limit ``item`` (whole units: a limit
        too small to keep one back keeps none).

        >>> from config.settings import PilotSettings
        >>> budget = KeyBudget(None, None, PilotSettings())  # type: ignore[arg-type]
        >>> {k: b.capacity for k, b in budget.buckets(parse("60/hour")).items()}
        {'shared': 48.0, 'newcomers': 12.0}
        >>> {k: b.capacity for k, b in budget.buckets(parse("2/minute")).items()}
        {'shared': 2.0}
        """
        period, amount = period_of(item), item.amount
        reserve = math.floor(amount * self.settings.reserve_share)
        found = {"shared": Bucket(float(amount - reserve), period)}
        if reserve > 0:
            found["newcomers"] = Bucket(float(reserve), period)
        return found

    @staticmethod
    def record(name: str, key: str, share: str) -> str:
        """The counter record of one share of one limit of one key."""
        return json.dumps(["budget", name, key, share])

    def _take(self, record: str, bucket: Bucket, cost: float) -> float:
        """Spend ``cost`` of ``bucket`` (one compare-and-set); 0.0 when taken, else the
        seconds until it would fit."""

        def spent(current: StoredCounter | None, now: float) -> tuple[Counted | None, float]:
            tat, wait = bucket.take(current.get("tat") if current else None, cost, now)
            return ({"tat": tat, "expires_at": tat} if tat is not None else None), wait

        return self.counters.swap(record, spent)

    def newcomer_item(self, name: str) -> RateLimitItem:
        """What one address may have drawn from the key in a day and still be a newcomer."""
        amount = math.ceil(self.visitor_amount.get(name, 1) * self.settings.newcomer_share)
        return parse(f"{max(1, amount)}/day")

    def spend(self, name: str, who: Caller, key: str, item: RateLimitItem, cost: int) -> float | None:
        """Spend ``cost`` of the key's limit ``name`` (its counter ``key``, its rate
        ``item``): from the shared budget, else, for an address that is new to it today, from
        the newcomers'. None when spent; else the seconds until the shared budget would fit
        it (what ``Retry-After`` says)."""
        buckets = self.buckets(item)
        allowance = self.newcomer_item(name)
        # what this address drew from the key today, shared or kept: past the allowance it is
        # no newcomer (a crowd that spent the shared budget cannot spend the kept one)
        drawn = (f"drawn-{name}", json.dumps([key, who.address]))
        wait = self._take(self.record(name, key, "shared"), buckets["shared"], cost)
        if wait == 0.0:
            if who.address is not None:
                self.limiter.hit(allowance, *drawn, cost=cost)
            return None
        newcomers = buckets.get("newcomers")
        if newcomers is None or who.address is None:
            return wait
        if not self.limiter.test(allowance, *drawn, cost=cost):
            return wait
        if self._take(self.record(name, key, "newcomers"), newcomers, cost) != 0.0:
            return wait
        self.limiter.hit(allowance, *drawn, cost=cost)
        return None

    def levels(
        self, key: str, key_name: str, items: Mapping[str, RateLimitItem], now: float
    ) -> list[BudgetLevel]:
        """How much of each budget of the key (its counter ``key``) is left: one row per limit
        and share."""
        rows = []
        for name, item in items.items():
            for share, bucket in self.buckets(item).items():
                stored = self.counters.read(self.record(name, key, share))
                left = round(bucket.left(stored.get("tat") if stored else None, now), 3)
                rows.append(
                    BudgetLevel(
                        key=key_name,
                        limit=name,
                        share=share,
                        capacity=bucket.capacity,
                        per_hour=round(bucket.capacity * 3600.0 / bucket.period_s, 1),
                        left=left,
                        low=left < self.settings.low_below,
                    )
                )
        return rows
