"""Run a coroutine to completion from sync code, inside a running event loop or not.

The caller's context variables (the turn's deadline, its usage ledger) go with it.

Usage::

    found = run_coroutine(retriever.search("refund time"))
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
from collections.abc import Coroutine
from typing import Any


def run_coroutine(coroutine: Coroutine[Any, Any, Any]) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    context = contextvars.copy_context()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(context.run, asyncio.run, coroutine).result()
