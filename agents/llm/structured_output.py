"""How a role's typed output is asked of an OpenAI-compatible server, and the one-time probe
that finds what the server accepts (``llm.structured_output: auto``).

Servers differ: OpenAI takes ``response_format: json_schema``; llama.cpp's server answers it
with HTTP 500 and takes ``json_object`` with the schema beside it; some take neither, and the
prompt's own JSON instructions must do.

Usage::

    mode = probe_structured_output("http://127.0.0.1:8080/v1", "none", "local-model")
    response_format(Judgement, mode)   # {"type": "json_object", "schema": {...}} or None
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from typing import Any

from pydantic import BaseModel

log = logging.getLogger(__name__)
MODES = ("json_schema", "json_object", "none")
PROBE_TIMEOUT_S = 30.0


class _Probe(BaseModel):
    ok: bool


def response_format(model: type[BaseModel], mode: str) -> dict[str, Any] | None:
    """The ``response_format`` to send for ``model`` in ``mode`` (None: send none)."""
    schema = model.model_json_schema()
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": model.__name__, "schema": schema, "strict": False},
        }
    if mode == "json_object":
        return {"type": "json_object", "schema": schema}
    return None


def parsed_here(
    model: type[BaseModel] | None, mode: str
) -> tuple[type[BaseModel] | None, dict[str, Any] | None]:
    """For a server that does not take ``json_schema``: the model its reply is parsed into by
    us, and the ``response_format`` sent instead (None: none); ``(None, None)`` otherwise.

    >>> parsed_here(_Probe, "json_schema"), parsed_here(_Probe, "none")
    ((None, None), (<class 'agents.llm.structured_output._Probe'>, None))
    """
    if model is None or mode == "json_schema":
        return None, None
    return model, response_format(model, mode)


def probe_structured_output(base_url: str, api_key: str | None, model: str) -> str:
    """The first mode the server answers with a completion (one tiny request each).

    A server that does not answer within ``PROBE_TIMEOUT_S`` (busy with another client's
    long request) says nothing about the modes it takes: the probe stops there and the
    prompt's own JSON instructions do (``none``, which every server takes), so a busy server
    never holds the start for longer than one timeout."""
    for mode in MODES[:-1]:
        body = {
            "model": model,
            "max_tokens": 8,
            "temperature": 0,
            "messages": [{"role": "user", "content": 'Reply with {"ok": true}.'}],
            "response_format": response_format(_Probe, mode),
        }
        request = urllib.request.Request(
            base_url.rstrip("/") + "/chat/completions",
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        if api_key and api_key != "none":
            request.add_header("Authorization", f"Bearer {api_key}")
        try:
            with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_S) as response:
                if "choices" in json.loads(response.read() or b"{}"):
                    return mode
        except (urllib.error.URLError, OSError, ValueError) as exc:
            if _timed_out(exc):
                log.warning(
                    "%s did not answer the structured-output probe in %g s: using none",
                    base_url,
                    PROBE_TIMEOUT_S,
                )
                return "none"
            continue
    return "none"


def _timed_out(exc: BaseException) -> bool:
    """Whether a probe request failed by waiting too long (not by the server's refusal)."""
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    return isinstance(reason, TimeoutError)
