"""The gap report's cache: one computation per key and minute, even for concurrent calls."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from service.domain.gaps import ReportCache
from tasks.gap_report import GapReport


def counting() -> tuple[list[int], object]:
    calls: list[int] = []
    gate = threading.Lock()

    def compute() -> GapReport:
        with gate:
            calls.append(1)
        time.sleep(0.05)
        return GapReport(questions=len(calls))

    return calls, compute


def test_concurrent_calls_for_one_key_compute_once_and_keys_stay_apart():
    reports, (calls, compute) = ReportCache(ttl_s=60), counting()
    with ThreadPoolExecutor(6) as pool:
        got = list(pool.map(lambda _: reports.get(("acme", 0.0), compute), range(6)))
    assert len(calls) == 1 and {r.questions for r in got} == {1}
    assert reports.get(("globex", 0.0), compute).questions == 2


def test_a_report_is_computed_again_after_its_time():
    reports, (calls, compute) = ReportCache(ttl_s=0.01), counting()
    reports.get("acme", compute)
    time.sleep(0.02)
    reports.get("acme", compute)
    assert len(calls) == 2
