"""A bounded, thread-safe cache of recent results, filled a batch at a time.

The turns of one process share their encoders and scorer: the same passages, sentences and
messages come back turn after turn, so their encodings are kept, the oldest dropped first.
Turns that need the same missing value at once compute it once: the first claims it, the
others wait for it (several customers asking the same question at the same moment read its
windows once, not once each).

Usage::

    cache = LruCache(2)
    cache.get_many(["a", "b"], lambda keys: [k.upper() for k in keys])   # ['A', 'B']

>>> cache = LruCache(2)
>>> cache.get_many(["a", "b", "a"], lambda keys: [k.upper() for k in keys])
['A', 'B', 'A']
>>> cache.get_many(["c"], lambda keys: [k * 2 for k in keys])
['cc']
>>> len(cache), "a" in cache, "b" in cache
(2, False, True)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LruCache(Generic[K, V]):
    """At most ``size`` values; ``compute`` runs outside the lock, on the missing keys only,
    and a key another thread is computing is waited for, not computed again. ``compute``
    must not read this same cache (it would wait for its own claim); reading another cache
    is fine where no cycle of caches forms."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"an LruCache holds at least one value, not {size}")
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()
        self._computing: dict[K, Future[V]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def get_many(self, keys: Sequence[K], compute: Callable[[list[K]], Sequence[V]]) -> list[V]:
        """The values of ``keys`` in order; ``compute(missing)`` returns one value per key.

        Keys this call claims are computed first, then the keys other threads were already
        computing are waited for; if their computation fails, this call claims them again.
        """
        known: dict[K, V] = {}
        others: dict[K, Future[V]] = {}
        claimed: dict[K, Future[V]] = {}
        with self._lock:
            for key in dict.fromkeys(keys):
                if key in self._items:
                    self._items.move_to_end(key)
                    known[key] = self._items[key]
                elif key in self._computing:
                    others[key] = self._computing[key]
                else:
                    claimed[key] = self._computing[key] = Future()
        if claimed:
            known.update(self._fill(claimed, compute))
        failed = []
        for key, future in others.items():
            try:
                known[key] = future.result()
            except BaseException:  # the other thread's failure, even an interrupt: ours to redo
                failed.append(key)
        if failed:
            known.update(zip(failed, self.get_many(failed, compute), strict=True))
        return [known[k] for k in keys]

    def _fill(
        self, claimed: dict[K, Future[V]], compute: Callable[[list[K]], Sequence[V]]
    ) -> dict[K, V]:
        """Compute the claimed keys, keep them, and hand them to whoever waits for them;
        whatever happens, no claim outlives this call (a waiter never waits for good)."""
        missing = list(claimed)
        try:
            values = dict(zip(missing, compute(missing), strict=True))
            with self._lock:
                self._items.update(values)
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
            for key, future in claimed.items():
                future.set_result(values[key])
            return values
        except BaseException as error:
            for future in claimed.values():
                if not future.done():
                    future.set_exception(error)
            raise
        finally:
            with self._lock:
                for key in missing:
                    self._computing.pop(key, None)
