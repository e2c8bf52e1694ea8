"""The web chat page (``/``), the agent desk (``/agent``) and the lead's page (``/lead``),
served with a strict Content-Security-Policy."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse, Response

STATIC = Path(__file__).resolve().parent.parent / "web" / "static"
# the page holds an API key: only its own script and styles run, links cannot be framed
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "connect-src 'self'; img-src 'self'; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

router = APIRouter(include_in_schema=False)


@router.get("/")
async def page() -> FileResponse:
    return FileResponse(STATIC / "index.html", headers=PAGE_HEADERS)


@router.get("/agent")
async def agent_desk() -> FileResponse:
    return FileResponse(STATIC / "agent.html", headers=PAGE_HEADERS)


@router.get("/lead")
async def lead_page() -> FileResponse:
    """The lead's dashboard: outcomes, drill-down, topics, articles, gaps, the editor."""
    return FileResponse(STATIC / "lead.html", headers=PAGE_HEADERS)


@router.get("/widget.js")
async def widget_script() -> FileResponse:
    """The embeddable widget (docs/operations.md): pasted into a team's pages, cached briefly
    so a fix reaches every site within minutes."""
    return FileResponse(STATIC / "widget.js", headers={"Cache-Control": "public, max-age=300"})


@router.get("/favicon.ico")
async def favicon() -> Response:
    return Response(status_code=204)  # no icon, and no 404 in the browser's console
