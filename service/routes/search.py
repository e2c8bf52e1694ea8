"""``POST /v1/search`` in watsonx's custom-service schema, under the key's enforced slots."""

from __future__ import annotations

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


@router.post("/v1/search", response_model=SearchResponse)
async def search(body: SearchRequest, who: Customer, pilot: Pilot) -> JSONResponse:
    """The knowledge base under the key's enforced slots (counted: ``searches``)."""
    slots = dict(who.slots)
    if who.tenant:
        slots["tenant"] = who.tenant

    def counted_search() -> SearchResultList:
        pilot.limits.spend("searches", who)  # 429 before anything is searched
        request = RetrievalRequest([body.query], slots, advisory=body.advisory_filters(), strict=False)
        return pilot.runtime.retriever.search_queries(request)

    try:  # one hop to the thread pool: the count (a store write on a server) and the search
        found = await run_in_threadpool(counted_search)
    except ApiError:
        raise
    except SlotError as exc:  # slots the rules refuse: the caller's to fix, not an outage
        raise ApiError(422, "invalid_slot", str(exc), field="slots") from None
    except Exception as exc:
        raise ApiError(
            503,
            "unavailable",
            pilot.settings.messages.connection_problem,
            {"reason": type(exc).__name__},
        ) from None
    return JSONResponse(to_response(found, pilot.settings.pilot.max_response_bytes))
