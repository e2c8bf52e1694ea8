"""``POST /v1/search`` in watsonx's custom-service schema, under the key's enforced slots."""

from __future__ import annotations

import logging

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from service.context import Customer, Pilot
from service.errors import ApiError
from service.search_api import SearchRequest, SearchResponse, to_response
from storage.retrieval.filters import SlotError
from storage.retrieval.request import RetrievalRequest
from storage.retrieval.results import SearchResultList

router = APIRouter(tags=["search"])
log = logging.getLogger(__name__)


class SearchFailed(Exception):
    """The search itself failed (not its count): an outage for the caller, named by type."""


@router.post("/v1/search", response_model=SearchResponse)
async def search(body: SearchRequest, who: Customer, pilot: Pilot) -> JSONResponse:
    """The knowledge base under the key's enforced slots (counted: ``searches``)."""
    slots = dict(who.slots)
    if who.tenant:
        slots["tenant"] = who.tenant

    def counted_search() -> SearchResultList:
        # one hop to the thread pool for the count and the search; the count's own errors (a
        # 429, a store that is down) reach the app's handlers as on every counted route
        pilot.limits.spend("searches", who)
        try:
            request = RetrievalRequest(
                [body.query], slots, advisory=body.advisory_filters(), strict=False
            )
            return pilot.runtime.retriever.search_queries(request)
        except SlotError:
            raise
        except Exception as exc:
            raise SearchFailed(type(exc).__name__) from exc

    try:
        found = await run_in_threadpool(counted_search)
    except SlotError as exc:  # slots the rules refuse: the caller's to fix, not an outage
        raise ApiError(422, "invalid_slot", str(exc), field="slots") from None
    except SearchFailed as exc:
        log.error("search failed: %s", exc)  # its type only: the message may quote the query
        raise ApiError(
            503, "unavailable", pilot.settings.messages.connection_problem, {"reason": str(exc)}
        ) from None
    return JSONResponse(to_response(found, pilot.settings.pilot.max_response_bytes))
