"""OpenTelemetry spans of the pilot's turns (``opentelemetry-sdk``): one ``supportcrew.turn``
span a turn, a child span for each step it ran, with their real start and end times; the
verdict, engine, session, tenant and model cost as attributes, never the customer's words.

Off unless ``observability.otlp_endpoint`` is set (OTLP over HTTP, batched). The provider is
the service's own, never the global one the frameworks' telemetry would use.

Usage::

    tracer = TurnTracer.from_settings(settings.observability)      # None when off
    tracer.record(result, engine="crewai", tenant="acme", started_s=t0, ended_s=t1)
    TurnTracer.exporting_to(InMemorySpanExporter())                # in tests
"""

from __future__ import annotations

import os

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.util.types import AttributeValue

from config.settings import Observability
from tasks.schemas import TurnResult

_NS = 1_000_000_000


def _provider(service_name: str) -> TracerProvider:
    # OTEL_SDK_DISABLED keeps the frameworks' telemetry off (config/telemetry.py); the operator
    # asked for these spans, so this one provider is built without it
    saved = os.environ.pop("OTEL_SDK_DISABLED", None)
    try:
        return TracerProvider(resource=Resource.create({"service.name": service_name}))
    finally:
        if saved is not None:
            os.environ["OTEL_SDK_DISABLED"] = saved


class TurnTracer:
    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer("supportcrew")

    @classmethod
    def from_settings(cls, observability: Observability) -> TurnTracer | None:
        if not observability.otlp_endpoint:
            return None
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider = _provider(observability.service_name)
        provider.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=observability.otlp_endpoint))
        )
        return cls(provider)

    @classmethod
    def exporting_to(cls, exporter: SpanExporter, service_name: str = "supportcrew") -> TurnTracer:
        provider = _provider(service_name)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        return cls(provider)

    def record(
        self, result: TurnResult, engine: str, tenant: str, started_s: float, ended_s: float
    ) -> None:
        """The turn's span and its steps' spans, from the times the turn recorded."""
        attributes: dict[str, AttributeValue] = {
            "supportcrew.session_id": result.session_id,
            "supportcrew.tenant": tenant,
            "supportcrew.engine": engine,
            "supportcrew.verdict": result.verdict,
            "supportcrew.handoff": result.handoff,
            "supportcrew.llm_calls": result.trace.llm_calls,
            "supportcrew.prompt_tokens": result.trace.prompt_tokens,
            "supportcrew.completion_tokens": result.trace.completion_tokens,
        }
        turn = self.tracer.start_span(
            "supportcrew.turn", start_time=int(started_s * _NS), attributes=attributes
        )
        if result.verdict == "error":
            turn.set_status(trace.StatusCode.ERROR, result.failure.kind if result.failure else "")
        parent = trace.set_span_in_context(turn)
        for step in result.trace.steps:
            if "skipped" in step.detail or not step.at:
                continue
            span = self.tracer.start_span(
                f"supportcrew.step.{step.name}",
                context=parent,
                start_time=int(step.at * _NS),
                attributes={"supportcrew.step": step.name},
            )
            span.end(end_time=int((step.at + step.ms / 1000) * _NS))
        turn.end(end_time=int(ended_s * _NS))

    def close(self) -> None:
        self.provider.shutdown()
