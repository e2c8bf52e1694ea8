"""A bounded, thread-safe cache of recent results, filled a batch at a time.

The turns of one process share their encoders and scorer: the same passages, sentences and
messages come back turn after turn, so their encodings are kept, the oldest dropped first.

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
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LruCache(Generic[K, V]):
    """At most ``size`` values; ``compute`` runs outside the lock, on the missing keys only."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"an LruCache holds at least one value, not {size}")
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def get_many(self, keys: Sequence[K], compute: Callable[[list[K]], Sequence[V]]) -> list[V]:
        """The values of ``keys`` in order; ``compute(missing)`` returns one value per key."""
        with self._lock:
            known: dict[K, V] = {}
            for key in keys:
                if key in self._items:
                    self._items.move_to_end(key)
                    known[key] = self._items[key]
        missing = list(dict.fromkeys(k for k in keys if k not in known))
        if missing:
            known.update(zip(missing, compute(missing), strict=True))
            with self._lock:
                self._items.update((k, known[k]) for k in missing)
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
        return [known[k] for k in keys]
