"""The shared cache of recent encodings: computes only what is missing, keeps the newest,
and holds under turns that use it at once."""

from __future__ import annotations

import threading
from concurrent.futures import Future

import pytest

from storage.lru import LruCache


def test_only_missing_keys_are_computed_and_once_each():
    asked: list[list[str]] = []

    def compute(keys: list[str]) -> list[str]:
        asked.append(keys)
        return [k.upper() for k in keys]

    cache: LruCache[str, str] = LruCache(4)
    assert cache.get_many(["a", "b", "a"], compute) == ["A", "B", "A"]
    assert cache.get_many(["b", "c"], compute) == ["B", "C"]
    assert asked == [["a", "b"], ["c"]]


def test_the_least_recently_used_value_goes_first():
    cache: LruCache[str, int] = LruCache(2)
    cache.get_many(["a", "b"], lambda keys: [1] * len(keys))
    cache.get_many(["a"], lambda keys: [2] * len(keys))  # a is used again: b is now oldest
    cache.get_many(["c"], lambda keys: [3] * len(keys))
    assert "a" in cache and "c" in cache and "b" not in cache and len(cache) == 2


def test_a_compute_that_returns_too_few_values_is_an_error():
    with pytest.raises(ValueError):
        LruCache(2).get_many(["a", "b"], lambda keys: ["only one"])
    with pytest.raises(ValueError, match="at least one"):
        LruCache(0)


def test_threads_sharing_a_small_cache_always_get_their_own_values():
    cache: LruCache[int, int] = LruCache(8)
    wrong: list[tuple[int, int]] = []
    errors: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for round_ in range(300):
                keys = [(offset + round_ + i) % 50 for i in range(6)]
                for key, value in zip(
                    keys, cache.get_many(keys, lambda ks: [k * 10 for k in ks]), strict=True
                ):
                    if value != key * 10:
                        wrong.append((key, value))
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n * 7,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and not wrong
    assert len(cache) <= 8


class _WatchedFuture(Future):
    """A Future that says when a thread starts waiting for it."""

    waiting = threading.Event()

    def result(self, timeout=None):
        _WatchedFuture.waiting.set()
        return super().result(timeout)


@pytest.fixture
def watched(monkeypatch):
    _WatchedFuture.waiting = threading.Event()
    monkeypatch.setattr("storage.lru.Future", _WatchedFuture)
    return _WatchedFuture


def test_turns_missing_the_same_values_at_once_compute_them_once(watched):
    cache: LruCache[str, str] = LruCache(8)
    started, release = threading.Event(), threading.Event()
    first_asked: list[list[str]] = []
    second_asked: list[list[str]] = []

    def slow(keys: list[str]) -> list[str]:
        first_asked.append(keys)
        started.set()
        release.wait(5)
        return [k.upper() for k in keys]

    def double(keys: list[str]) -> list[str]:
        second_asked.append(keys)
        return [k * 2 for k in keys]

    results: dict[str, list[str]] = {}
    first = threading.Thread(target=lambda: results.update(first=cache.get_many(["a", "b"], slow)))
    first.start()
    assert started.wait(5)
    second = threading.Thread(target=lambda: results.update(second=cache.get_many(["b", "c"], double)))
    second.start()
    assert watched.waiting.wait(5)  # "c" computed, and now waiting for the first turn's "b"
    assert second.is_alive()
    release.set()
    first.join(5)
    second.join(5)
    assert results == {"first": ["A", "B"], "second": ["B", "cc"]}
    assert first_asked == [["a", "b"]] and second_asked == [["c"]]


def test_a_failed_computation_is_redone_by_the_turn_that_waited(watched):
    cache: LruCache[str, str] = LruCache(8)
    started, release = threading.Event(), threading.Event()

    def failing(keys: list[str]) -> list[str]:
        started.set()
        release.wait(5)
        raise RuntimeError("the encoder failed")

    errors: list[BaseException] = []

    def first_turn() -> None:
        try:
            cache.get_many(["a"], failing)
        except RuntimeError as error:
            errors.append(error)

    first = threading.Thread(target=first_turn)
    first.start()
    assert started.wait(5)
    results: list[list[str]] = []
    second = threading.Thread(
        target=lambda: results.append(cache.get_many(["a"], lambda ks: [k.upper() for k in ks]))
    )
    second.start()
    assert watched.waiting.wait(5)  # the second turn waits for the first one's "a"
    release.set()
    first.join(5)
    second.join(5)
    assert [str(e) for e in errors] == ["the encoder failed"]
    assert results == [["A"]]
    assert cache.get_many(["a"], lambda ks: ["recomputed"]) == ["A"]


def test_a_computation_that_fails_leaves_no_claim_behind():
    cache: LruCache[str, str] = LruCache(8)

    def interrupted(keys: list[str]) -> list[str]:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        cache.get_many(["a"], interrupted)
    assert cache.get_many(["a"], lambda ks: ["A"]) == ["A"]  # not waiting for a dead claim
