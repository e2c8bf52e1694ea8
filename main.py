"""supportcrew command line.

python main.py --help
python main.py ingest examples/kb --prune
python main.py search "How long does a refund take?" --slot tier=basic
python main.py eval retrieval --dataset ../shared/datasets/scifact
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from config.settings import PIPELINES, ConfigError, Settings, load_settings
from config.telemetry import apply_telemetry_policy

apply_telemetry_policy(enabled=os.environ.get("SUPPORTCREW_TELEMETRY", "").lower() == "true")

app = typer.Typer(
    help="supportcrew: a multi-agent customer-support assistant.",
    no_args_is_help=True,
    add_completion=False,
)
eval_app = typer.Typer(help="Measure the assistant.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")
memory_app = typer.Typer(
    help="Show, export or forget what supportcrew remembers of a customer.", no_args_is_help=True
)
app.add_typer(memory_app, name="memory")
console = Console(soft_wrap=True)  # lines a script may grep never wrap; tables fit the width
errors = Console(stderr=True, soft_wrap=True)


class State:
    data_dir: Path = Path(".supportcrew")
    config_file: Path | None = None
    _settings: Settings | None = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings(self.config_file)
        return self._settings


state = State()


def _known_errors() -> tuple[type[BaseException], ...]:
    from agents.llm.factory import LlmConfigError
    from evaluation.retrieval import DatasetError
    from storage.kb.documents import DocumentError
    from storage.kb.model_files import ModelFilesError
    from storage.memory import ScopeError
    from storage.qdrant.store import StoreError
    from storage.retrieval.filters import SlotError

    return (
        ConfigError,
        SlotError,
        StoreError,
        DocumentError,
        ModelFilesError,
        DatasetError,
        LlmConfigError,
        ScopeError,
        ValueError,
    )


def friendly_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """Turn expected failures into one clear line on stderr and exit code 2."""

    @wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except _known_errors() as exc:
            errors.print(f"[bold red]error:[/] {exc}", highlight=False, markup=True)
            raise typer.Exit(2) from None

    return wrapper


@contextmanager
def open_kb(collection: str | None = None) -> Iterator[Any]:
    from storage.kb.knowledge_base import KnowledgeBase

    settings = state.settings
    if collection:
        qdrant = settings.qdrant.model_copy(update={"collection": collection})
        settings = settings.model_copy(update={"qdrant": qdrant})
    kb = KnowledgeBase.open(settings, state.data_dir)
    try:
        yield kb
    finally:
        kb.close()


def parse_slots(pairs: list[str]) -> dict[str, str]:
    slots: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--slot {pair!r}: expected key=value")
        slots[key.strip()] = value.strip()
    return slots


@app.callback()
def main(
    data_dir: Annotated[
        Path,
        typer.Option(envvar="SUPPORTCREW_DATA_DIR", help="Where embedded Qdrant and sessions live."),
    ] = Path(".supportcrew"),
    config: Annotated[
        Path | None, typer.Option("--config", help="Settings file instead of config/assistant.yaml.")
    ] = None,
) -> None:
    """supportcrew: answers customers from a Qdrant knowledge base, with cited evidence."""
    state.data_dir = data_dir
    state.config_file = config
    state._settings = None


@app.command()
@friendly_errors
def ingest(
    paths: Annotated[
        list[str],
        typer.Argument(
            help="Files or folders; a help-center site (https://.../sitemap.xml or a start URL); "
            "a Zendesk Guide articles export (.json)."
        ),
    ],
    collection: Annotated[
        str | None, typer.Option(help="Collection name (default from config).")
    ] = None,
    recreate: Annotated[bool, typer.Option(help="Drop the collection first.")] = False,
    prune: Annotated[bool, typer.Option(help="Remove documents whose files are gone.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Ingest Markdown, text, HTML, PDF files, a BEIR corpus.jsonl, a help-center site or a
    Zendesk export into the knowledge base. Exit 1 when a path does not exist or a site or
    export was not read whole (nothing is pruned from it then)."""
    from dataclasses import asdict

    from config.sources import SourceSettings
    from storage.kb.ingest import ingest_paths
    from storage.kb.named_values import unlisted
    from storage.kb.sync import sync_source

    sources = [
        SourceSettings(kind="site" if p.startswith(("http://", "https://")) else "zendesk", location=p)
        for p in paths
        if p.startswith(("http://", "https://")) or p.lower().endswith(".json")
    ]
    files = [Path(p) for p in paths if not any(p == s.location for s in sources)]
    incomplete = False
    if sources:
        with open_kb(collection) as kb:
            kb.ensure_collection(recreate=recreate)
            recreate = False
            reports = [sync_source(kb, source) for source in sources]
            extra = unlisted(state.settings.slots, kb)
        print_sync(reports, as_json, extra)
        incomplete = not all(r.complete for r in reports)
        if not files:
            raise typer.Exit(1 if incomplete else 0)
    with (
        open_kb(collection) as kb,
        Progress(
            TextColumn("[bold]ingest"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        ) as progress,
    ):
        task = progress.add_task("ingest", total=None)
        report = ingest_paths(
            kb,
            files,
            recreate=recreate,
            prune=prune,
            progress=lambda done, total: progress.update(task, completed=done, total=total),
        )
        extra = unlisted(state.settings.slots, kb)
    missing = any(reason == "no such file or folder" for _, reason in report.skipped)
    if as_json:
        record = {"collection": kb.collection, **asdict(report), "unlisted_values": extra}
        sys.stdout.write(json.dumps(record) + "\n")
        raise typer.Exit(1 if missing or incomplete else 0)
    table = Table(title=f"ingest into {kb.collection!r}")
    for column in (
        "files",
        "documents",
        "chunks",
        "unchanged",
        "replaced",
        "pruned",
        "skipped",
        "seconds",
    ):
        table.add_column(column, justify="right")
    table.add_row(
        *(
            str(v)
            for v in (
                report.files,
                report.documents,
                report.chunks,
                report.unchanged,
                report.replaced,
                report.pruned,
                len(report.skipped),
                f"{report.seconds:.1f}",
            )
        )
    )
    console.print(table)
    for path, reason in report.skipped:
        errors.print(
            f"[yellow]skipped[/] {reason if path in reason else f'{path}: {reason}'}", highlight=False
        )
    for warning in report.warnings:
        errors.print(f"[yellow]warning[/] {warning}", highlight=False)
    print_unlisted(extra)
    if missing or incomplete:
        raise typer.Exit(1)


def print_unlisted(extra: dict[str, list[str]]) -> None:
    """The slot values the pages name that the configuration does not list, and how to list
    them (``storage.kb.named_values``)."""
    from rich.markup import escape

    from storage.kb.named_values import advice

    for line in advice(extra, state.settings.slots):
        errors.print(f"[yellow]note[/] {escape(line)}", highlight=False)


def print_sync(reports: list[Any], as_json: bool, extra: dict[str, list[str]] | None = None) -> None:
    """Each source's sync: a line (or a JSON line) each, then what failed or was skipped, and
    the slot values the pages name that the configuration does not list (``extra``)."""
    from dataclasses import asdict

    from rich.markup import escape

    if as_json:
        for report in reports:
            record = {**asdict(report), "complete": report.complete, "unlisted_values": extra or {}}
            sys.stdout.write(json.dumps(record) + "\n")
        return
    for r in reports:
        state = "done" if r.complete else "[red]not read whole[/]"
        console.print(
            f"[bold]{escape(r.source)}[/] ({r.kind}): {r.added} added, {r.changed} changed, "
            f"{r.unchanged} the same, {r.removed} removed; {r.requests} requests, "
            f"{len(r.failures)} failed, {r.seconds:.1f} s; {state}",
            highlight=False,
        )
    for r in reports:
        for what, why in r.failures:
            errors.print(f"[red]failed[/] {what}: {why}", highlight=False)
        for what, why in r.skipped:
            errors.print(f"[yellow]skipped[/] {what}: {why}", highlight=False)
        for warning in r.warnings:
            errors.print(f"[yellow]warning[/] {warning}", highlight=False)
        if not r.complete:
            errors.print(f"[red]{r.source}: not read whole; nothing was pruned[/]", highlight=False)
    print_unlisted(extra or {})


@app.command()
@friendly_errors
def sync(
    source: Annotated[
        list[str] | None, typer.Option("--source", help="Only the sources of these names.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON line per source.")] = False,
) -> None:
    """Re-sync every source of ``sources:`` in the configuration (folders, sites, Zendesk
    exports): added / changed / unchanged / removed per source. Exit 1 when one was not read
    whole."""
    from storage.kb.named_values import unlisted
    from storage.kb.sync import sync_sources

    chosen = [s for s in state.settings.sources if not source or s.label in source]
    if not chosen:
        errors.print(
            "[bold red]error:[/] no sources to sync: list them under sources: in the configuration"
            + (f" (none named {', '.join(source)})" if source else ""),
            highlight=False,
        )
        raise typer.Exit(2)
    with open_kb() as kb:
        reports = sync_sources(kb, chosen)
        extra = unlisted(state.settings.slots, kb)
    print_sync(reports, as_json, extra)
    if not all(r.complete for r in reports):
        raise typer.Exit(1)


@app.command()
@friendly_errors
def search(
    query: Annotated[str, typer.Argument(help="What to search for.")],
    slot: Annotated[list[str] | None, typer.Option("--slot", help="Slot as key=value.")] = None,
    top_k: Annotated[int | None, typer.Option(min=1, max=100)] = None,
    pipeline: Annotated[str | None, typer.Option(help=f"One of {', '.join(PIPELINES)}.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Search the knowledge base under slot filters and print the ranked passages."""
    from integrations.retriever_loader import load_retriever
    from storage.retrieval.request import RetrievalRequest
    from storage.retrieval.retriever import QdrantRetriever

    if pipeline is not None and pipeline not in PIPELINES:
        raise ValueError(f"--pipeline {pipeline!r}: choose one of {', '.join(PIPELINES)}")
    slots = parse_slots(slot or [])
    retriever = load_retriever(state.settings, state.data_dir)  # vector_store.type decides
    try:
        if isinstance(retriever, QdrantRetriever) and retriever.kb is not None:
            retriever.kb.require_documents()
        found = retriever.search_queries(
            RetrievalRequest([query], slots, top_k=top_k, pipeline=pipeline)
        )
    finally:
        retriever.close()
    if as_json:
        payload = {"results": [r.__dict__ for r in found.results], "metadata": found.metadata}
        sys.stdout.write(json.dumps(payload, indent=2, default=str) + "\n")
        return
    console.print(f"[dim]filters:[/] {found.metadata['filters']}")
    if found.metadata["ignored_filters"]:
        console.print(f"[yellow]ignored:[/] {found.metadata['ignored_filters']}")
    table = Table(show_lines=True)
    for column in ("#", "score", "source", "passage"):
        table.add_column(column)
    for rank, result in enumerate(found.results, start=1):
        meta = result.metadata
        table.add_row(
            str(rank),
            f"{result.score:.4f}",
            f"{meta['source_id']}\n{meta.get('title', '')}",
            result.text[:400],
        )
    console.print(table if found.results else "[yellow]no results[/]")


@app.command()
@friendly_errors
def kickoff(
    script: Annotated[Path, typer.Argument(help="Conversations YAML (see examples/kickoff/).")],
    output: Annotated[Path | None, typer.Option(help="Write one JSON line per turn here.")] = None,
    engine: Annotated[str | None, typer.Option(help="crewai | autogen")] = None,
    process: Annotated[str | None, typer.Option(help="sequential | hierarchical")] = None,
    llm: Annotated[
        str | None, typer.Option(help="local, or a provider such as openai/gpt-4o-mini")
    ] = None,
    answers: Annotated[
        bool, typer.Option(help="Print what was said in each turn under the table.")
    ] = True,
) -> None:
    """Run scripted conversations non-interactively; exit 1 when any expectation fails."""
    from agents.build import build_runtime
    from evaluation.kickoff import check_script_slots, load_script, run_script

    if process is not None and process not in ("sequential", "hierarchical"):
        raise ValueError(f"--process {process!r}: choose sequential or hierarchical")
    conversations = load_script(script)
    if output is not None and not output.parent.is_dir():
        raise ConfigError(f"--output {output}: folder {output.parent} does not exist")
    settings = state.settings
    if llm:
        settings = settings.model_copy(update={"llm": settings.llm.model_copy(update={"provider": llm})})
    runtime = build_runtime(settings, state.data_dir, engine=engine, process=process)
    try:  # a slot value the rules refuse: said now, naming it, never a turn that fails on it
        check_script_slots(conversations, runtime.settings.slots, script)
    except ConfigError:
        runtime.close()
        raise
    table = Table(title=f"kickoff {script.name} ({runtime.engine.name}, {runtime.engine.process})")
    for column in ("conversation", "#", "verdict", "cited", "LLM calls", "seconds", "expect"):
        table.add_column(column)
    failed = 0
    said: list[dict[str, Any]] = []
    sink = output.open("w", encoding="utf-8") if output else None
    try:
        with console.status("the crew is working…"):
            for line in run_script(conversations, runtime):
                if sink:
                    sink.write(json.dumps(line) + "\n")
                    sink.flush()
                failures = line["expect_failures"]
                failed += bool(failures)
                said.append(line)
                table.add_row(
                    line["conversation_id"],
                    str(line["turn_index"]),
                    line["verdict"],
                    ", ".join(c["source_id"] for c in line["citations"]) or "-",
                    str(line["trace"]["llm_calls"]),
                    f"{line['trace']['duration_ms'] / 1000:.1f}",
                    "[red]" + "; ".join(failures) + "[/]" if failures else "[green]ok[/]",
                )
    finally:
        if sink:
            sink.close()
        runtime.close()
    console.print(table)
    if answers:
        print_answers(said)
    if failed:
        errors.print(f"[red]{failed} turn(s) failed their expectations[/]")
        raise typer.Exit(1)


def print_answers(lines: list[dict[str, Any]]) -> None:
    """Each kickoff turn: what the customer wrote and what the assistant answered, wrapped
    to the terminal, with its numbered sources."""
    from rich.text import Text

    from terminal.safe_text import visible

    for line in lines:
        head = Text(f"{line['conversation_id']} #{line['turn_index']} ", style="bold")
        head.append(f"({line['verdict']})", style="dim")
        console.print(head, soft_wrap=False)
        body = Text("  customer: ", style="dim") + visible(line.get("user", ""))
        body += Text("\n  assistant: ", style="dim") + visible(line["answer"])
        for number, citation in enumerate(line["citations"], start=1):
            body += Text(
                f"\n  [{number}] {citation['title']} {citation.get('url') or citation['source_id']}",
                style="dim",
            )
        console.print(body, soft_wrap=False, overflow="fold")


@contextmanager
def open_memory() -> Iterator[Any]:
    from storage.memory import MemoryStore

    with open_kb() as kb:
        yield MemoryStore(kb.store, kb.encoders, state.settings.slots)


CustomerOption = Annotated[str, typer.Option("--customer", help="Customer id.")]
TenantOption = Annotated[str, typer.Option("--tenant", help="Tenant, when the pilot sets one.")]


@memory_app.command("show")
@friendly_errors
def memory_show(
    customer: CustomerOption,
    tenant: TenantOption = "",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Sessions, entities and long-term memories of one customer."""
    from storage.memory import Scope

    with open_memory() as memory:
        data = memory.export(Scope(customer, tenant))
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
        return
    from terminal.safe_text import visible

    entities = Table(title=visible(f"entities of {customer}"))
    for column in ("type", "value", "seen in"):
        entities.add_column(column)
    for e in data["entities"]:
        entities.add_row(
            visible(e["type"]), visible(e["value"]), visible(", ".join(e["source_turns"][-3:]))
        )
    memories = Table(title="long-term memories")
    for column in ("session", "summary", "resolution", "sources"):
        memories.add_column(column)
    for m in data["memories"]:
        memories.add_row(
            visible(m["session_id"]),
            visible(m["summary"][:80]),
            visible(m["resolution"][:80]),
            visible(", ".join(m["sources"])),
        )
    sessions = sorted({t["session_id"] for t in data["sessions"]})
    console.print(
        visible(
            f"{len(data['sessions'])} stored turns in {len(sessions)} "
            f"session(s): {', '.join(sessions) or '-'}"
        )
    )
    console.print(entities, memories)


@memory_app.command("export")
@friendly_errors
def memory_export(customer: CustomerOption, tenant: TenantOption = "") -> None:
    """Everything stored about one customer, as JSON on stdout."""
    from storage.memory import Scope

    with open_memory() as memory:
        data = memory.export(Scope(customer, tenant))
    sys.stdout.write(
        json.dumps({"customer_id": customer, "tenant": tenant, **data}, indent=2, default=str) + "\n"
    )


@memory_app.command("forget")
@friendly_errors
def memory_forget(
    customer: CustomerOption,
    tenant: TenantOption = "",
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Erase without asking.")] = False,
) -> None:
    """Erase the customer's stored turns, entities and memories (asks first: it cannot be
    undone); say how many records went."""
    from storage.memory import Scope

    scope = Scope(customer, tenant)  # a bad id is refused before the question
    if not yes:
        typer.confirm(
            f"Erase every stored turn, entity and memory of {customer}? This cannot be undone.",
            abort=True,
        )
    with open_memory() as memory:
        counts = memory.forget(scope)
    named = {"sessions": "stored turns"}  # the sessions collection holds one record per turn
    console.print(
        f"forgot {sum(counts.values())} record(s) of {customer}: "
        + ", ".join(f"{n} {named.get(name, name)}" for name, n in counts.items())
    )


@app.command()
@friendly_errors
def chat(
    customer: Annotated[str | None, typer.Option(help="Customer id (enables memory).")] = None,
    slot: Annotated[list[str] | None, typer.Option("--slot", help="Slot as key=value.")] = None,
    engine: Annotated[str | None, typer.Option(help="crewai | autogen")] = None,
    process: Annotated[str | None, typer.Option(help="sequential | hierarchical")] = None,
) -> None:
    """Chat with the crew in the terminal."""
    from agents.build import build_runtime
    from storage.memory import Scope
    from storage.retrieval.filters import build_filters
    from terminal.chat import ChatLoop

    slots = parse_slots(slot or [])
    if customer:  # one a memory would refuse is refused here, before any turn (ScopeError)
        Scope(customer, slots.get("tenant", ""))
    runtime = build_runtime(state.settings, state.data_dir, engine=engine, process=process)
    state.data_dir.mkdir(parents=True, exist_ok=True)
    try:
        # the rules as the runtime applies them: the plans the pages name are known too
        build_filters(runtime.settings.slots, slots)
        ChatLoop(
            runtime, customer, slots, history_file=state.data_dir / "chat_history", console=console
        ).run()
    finally:
        runtime.close()


report_app = typer.Typer(help="Reports for support leads.", no_args_is_help=True)
app.add_typer(report_app, name="report")


@report_app.command("gaps")
@friendly_errors
def report_gaps(
    tenant: TenantOption = "",
    since: Annotated[str, typer.Option(help="7d, 24h, 30m or an ISO date; empty: all.")] = "",
    slot: Annotated[
        list[str] | None,
        typer.Option("--slot", help="Slot the nearest article is searched under, key=value."),
    ] = None,
    top: Annotated[int, typer.Option(min=1, max=100, help="Largest groups shown.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """What customers asked that the knowledge base could not answer, grouped by meaning:
    refused and handed-off turns, answers rated not helpful (largest group first)."""
    import time

    from service.domain.gaps import tenant_gap_report
    from service.stores.pilot_store import PilotStore
    from storage.memory import MemoryStore
    from storage.retrieval.retriever import QdrantRetriever
    from tasks.evidence import EvidenceScorer
    from tasks.gap_report import parse_since

    start = parse_since(since, time.time())
    slots = {"access_level": "internal", **parse_slots(slot or [])}
    with open_kb() as kb:
        sessions = PilotStore(kb.store, kb.encoders)
        report = tenant_gap_report(
            MemoryStore(kb.store, kb.encoders, state.settings.slots),
            sessions,
            QdrantRetriever(kb=kb),
            tenant,
            start,
            slots,
            answerable=EvidenceScorer(kb.encoders, state.settings.evidence).answerable,
        )
        # a pilot whose keys all have a tenant stores nothing under "": never a silent 0
        others = [t for t in sessions.tenants() if t] if not tenant and not report.questions else []
    if others:
        raise ValueError(
            "no questions without a tenant; this store's sessions belong to "
            f"{', '.join(others)}: give --tenant"
        )
    report.clusters = report.clusters[:top]
    if as_json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
        return
    from terminal.safe_text import visible

    latest = f", the latest {report.clustered} grouped" if report.clustered < report.questions else ""
    table = Table(title=f"knowledge gaps: {report.questions} question(s){latest}")
    for column in ("#", "asked", "kinds", "examples", "nearest article"):
        table.add_column(column)
    for rank, cluster in enumerate(report.clusters, start=1):
        near = cluster.nearest_article
        table.add_row(
            str(rank),
            str(cluster.size),
            ", ".join(f"{k} {n}" for k, n in cluster.kinds.items()),
            visible("\n".join(cluster.examples)),
            visible(f"{near.source_id} ({near.score:.2f})") if near else "-",
        )
    console.print(table if report.clusters else "no unanswered questions stored")
    if report.errors:
        steps = ", ".join(sorted({f"{f.kind} in {f.step}" for f in report.failed}))
        console.print(f"{report.errors} turn(s) failed ({steps}): see the service's log")


@report_app.command("outcomes")
@friendly_errors
def report_outcomes(
    tenant: TenantOption = "",
    days: Annotated[int, typer.Option(min=1, max=366, help="The last N days.")] = 30,
    as_csv: Annotated[
        bool, typer.Option("--csv", help="Every conversation's label and evidence as CSV.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """What the assistant achieved: resolution, hand-off, unanswered and suggested rates,
    satisfaction and the closing answers' csat rate per day, and every conversation's label
    with the evidence behind it."""
    import time

    from service.domain.outcomes import conversations_csv, tenant_outcomes
    from service.stores.pilot_store import PilotStore
    from storage.memory import MemoryStore

    with open_kb() as kb:
        report = tenant_outcomes(
            MemoryStore(kb.store, kb.encoders, state.settings.slots),
            PilotStore(kb.store, kb.encoders),
            tenant,
            time.time(),
            state.settings.pilot,
            days,
        )
    if as_json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
        return
    if as_csv:  # the API's CSV: its columns, formula cells escaped
        sys.stdout.write(conversations_csv(report.conversations))
        return
    table = Table(
        title=f"outcomes since {report.since_day} ({report.total_conversations} conversations)"
    )
    shown = (
        "involved",
        "resolution_rate",
        "anonymous_confirmed_rate",  # confirmed by anonymous marks: apart, not resolutions
        "handoff_rate",
        "unanswered_rate",
        "suggested_rate",
        "satisfaction",
        "csat_rate",  # yes to "Did we solve your problem today?" of those that answered it
        "csat_response_rate",  # of those asked it, the share that answered
    )
    for column in ("day", *shown):
        table.add_column(column, justify="left" if column == "day" else "right")
    for day in report.days:
        row = day.model_dump()
        table.add_row(day.day, *("-" if row[k] is None else str(row[k]) for k in shown))
    t = report.totals
    table.add_row("all", *("-" if t.get(k) is None else str(t[k]) for k in shown))
    console.print(table if report.days else "no conversations with a question in this window")


@app.command()
@friendly_errors
def replay(
    against: Annotated[
        Path,
        typer.Option(
            "--against",
            help="The changed settings file (another knowledge-base collection, gate, roles...).",
        ),
    ],
    tenant: TenantOption = "",
    days: Annotated[int, typer.Option(min=1, max=366, help="Questions of the last N days.")] = 30,
    limit: Annotated[int, typer.Option(min=1, max=5000, help="At most this many questions.")] = 200,
    engine: Annotated[str | None, typer.Option(help="crewai | autogen")] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print every question's change as JSON.")
    ] = False,
) -> None:
    """Replay recent real customer questions against a change before it goes live: what would
    be newly answered, lost, or answered from another page. Exit 1 when any answer is lost
    (put it in a team's CI); nothing is stored."""
    import time

    from agents.build import build_runtime
    from evaluation.replay import replies
    from storage.memory import MemoryStore
    from tasks.replay import compare, recent_questions, summary

    changed = load_settings(against)
    with open_kb() as kb:
        memory = MemoryStore(kb.store, kb.encoders, state.settings.slots)
        asked = recent_questions(memory, tenant, time.time() - days * 86_400.0, limit)
    if not asked:
        console.print(f"no customer questions in the last {days} days to replay")
        return
    answered = []
    for settings in (state.settings, changed):
        runtime = build_runtime(settings, state.data_dir, engine=engine)
        try:
            with console.status(f"replaying {len(asked)} questions…"):
                answered.append(replies(runtime, asked))
        finally:
            runtime.close()
    changes = compare(asked, *answered)
    counts = summary(changes)
    if as_json:
        sys.stdout.write(
            json.dumps({"summary": counts, "changes": [c.model_dump() for c in changes]}, indent=2)
            + "\n"
        )
    else:
        table = Table(title=f"replay of {len(asked)} questions against {against}")
        for column in ("change", "question", "before", "after"):
            table.add_column(column)
        for c in changes:
            if c.change != "same":
                table.add_row(
                    c.change,
                    c.question[:80],
                    f"{c.before.verdict} {' '.join(c.before.pages[:1])}",
                    f"{c.after.verdict} {' '.join(c.after.pages[:1])}",
                )
        console.print(table if any(c.change != "same" for c in changes) else "nothing changes")
        console.print(", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in counts.items()))
    if counts["lost"]:
        raise typer.Exit(1)


keys_app = typer.Typer(help="Pilot API keys.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")


@keys_app.command("hash")
def keys_hash(key: Annotated[str, typer.Argument(help="The key you hand to a caller.")]) -> None:
    """Print the SHA-256 to put in pilot.api_keys (keys are never stored in clear)."""
    from service.auth import hash_key

    sys.stdout.write(hash_key(key) + "\n")


@app.command()
@friendly_errors
def openapi(
    output: Annotated[
        Path | None,
        typer.Option("--output", help="Write it here (docs/openapi.json) instead of stdout."),
    ] = None,
) -> None:
    """The pilot's OpenAPI schema (every route with its request and response models)."""
    from service.openapi import schema_text

    text = schema_text(state.settings)
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")


class Stopped(Exception):
    """The service was asked to stop (SIGTERM), after its own graceful shutdown."""


def _stopped(_signum: int, _frame: object) -> None:
    raise Stopped


@app.command()
@friendly_errors
def serve(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535)] = 8000,
    engine: Annotated[str | None, typer.Option(help="crewai | autogen")] = None,
    process: Annotated[str | None, typer.Option(help="sequential | hierarchical")] = None,
) -> None:
    """Run the pilot HTTP service and its web chat page."""
    import uvicorn

    from agents.build import build_runtime
    from service.app import create_app
    from service.auth import check_key_slots
    from service.header_timeout import server_config
    from service.logs import uvicorn_log_config
    from service.malloc_arenas import limit_malloc_arenas, return_freed_heap

    limit_malloc_arenas()  # before the runtime's and the server's threads
    settings = state.settings.for_serving()
    if not settings.pilot.api_keys:
        raise ValueError(
            "pilot.api_keys is empty: issue a key (python main.py keys hash KEY) "
            "and set SUPPORTCREW_PILOT__API_KEYS"
        )
    runtime = build_runtime(settings, state.data_dir, engine=engine, process=process)
    return_freed_heap()  # what loading the models needed only while loading
    try:
        check_key_slots(settings.pilot.api_keys, runtime.settings.slots)  # exit 2 naming the key
        app = create_app(settings, state.data_dir, runtime)
        log_config = uvicorn_log_config(settings.observability)
        server = uvicorn.Server(
            server_config(
                app,
                host,
                port,
                settings.pilot.header_timeout_s,
                log_config=log_config,
                trusted_proxies=settings.pilot.trusted_proxies,
            )
        )
        # uvicorn stops gracefully on SIGTERM, then raises the signal again, whose default
        # action ends the process before ``runtime.close()``: the embedded store never flushed,
        # its write-ahead logs never cut, and every start replayed them whole (issue 67)
        previous = signal.signal(signal.SIGTERM, _stopped)
        try:
            with contextlib.suppress(KeyboardInterrupt, Stopped):
                server.run()
        finally:
            signal.signal(signal.SIGTERM, previous)
        if not server.started:
            raise typer.Exit(3)  # uvicorn's own "startup failed" status; it said why
    finally:
        runtime.close()


@eval_app.command("retrieval")
@friendly_errors
def eval_retrieval(
    dataset: Annotated[Path, typer.Option(help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/.")],
    split: Annotated[str, typer.Option(help="qrels split to score.")] = "test",
    stages: Annotated[str, typer.Option(help="Comma-separated pipelines.")] = ",".join(PIPELINES),
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Score retrieval stages on a BEIR dataset (ingests its corpus once, idempotently)."""
    from evaluation.retrieval import evaluate, load_beir
    from storage.kb.ingest import ingest_paths

    chosen = [s.strip() for s in stages.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in PIPELINES]
    if unknown or not chosen:
        raise ValueError(f"--stages: unknown {unknown}; choose from {', '.join(PIPELINES)}")
    data = load_beir(dataset, split)
    with open_kb(f"beir-{data.name}") as kb:
        ingest_paths(kb, [data.corpus])
        results = evaluate(kb, data, chosen)
    if as_json:
        sys.stdout.write(json.dumps(results, indent=2) + "\n")
        return
    table = Table(title=f"{data.name} ({split}, {len(data.queries)} queries)")
    for column in ("stage", "nDCG@10", "Recall@100", "MRR@10", "p50 ms", "p95 ms"):
        table.add_column(column, justify="right")
    for stage, row in results.items():
        table.add_row(
            stage,
            *(f"{row[k]:.3f}" for k in ("nDCG@10", "Recall@100", "MRR@10")),
            f"{row['p50_ms']:.1f}",
            f"{row['p95_ms']:.1f}",
        )
    console.print(table)


@eval_app.command("answers")
@friendly_errors
def eval_answers(
    dataset: Annotated[
        Path,
        typer.Option(
            help="A pack (kb/, questions.jsonl) or a BEIR-like "
            "folder (corpus.jsonl, queries.jsonl, qrels/)."
        ),
    ],
    split: Annotated[str, typer.Option(help="qrels split, for a BEIR-like folder.")] = "test",
    engine: Annotated[str | None, typer.Option(help="crewai | autogen")] = None,
    process: Annotated[str | None, typer.Option(help="sequential | hierarchical")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Only the first N questions.")] = None,
    output: Annotated[Path | None, typer.Option(help="Write the report as JSON here.")] = None,
    plot: Annotated[
        Path | None, typer.Option(help="Write the gate's risk-coverage curve as a PNG here.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Ask each question of a labelled set as a new conversation; score answers and refusals."""
    from agents.build import build_runtime
    from evaluation.answer_sets import load_answer_set
    from evaluation.answers import answer_set_settings, evaluate_answers, plot_risk_coverage
    from storage.kb.ingest import ingest_paths
    from storage.kb.knowledge_base import KnowledgeBase

    if plot is not None and plot.suffix.lower() != ".png":
        raise ValueError(f"--plot {plot}: the plot is written as PNG; name a .png file")
    answer_set = load_answer_set(dataset, split)
    settings = answer_set_settings(state.settings, answer_set.name, state.data_dir)
    kb = KnowledgeBase.open(settings, state.data_dir)
    try:
        ingest_paths(kb, [answer_set.kb], prune=True)
    finally:
        kb.close()
    runtime = build_runtime(settings, state.data_dir, engine=engine, process=process)
    try:
        with console.status(f"asking {len(answer_set.questions[:limit])} questions…"):
            report = evaluate_answers(runtime, answer_set, limit)
    finally:
        runtime.close()
    from tasks.operating_points import operating_points

    answer_at = operating_points(settings.evidence)[0]
    payload = {
        "dataset": answer_set.name,
        "engine": runtime.engine.name,
        "process": runtime.engine.process,
        "summary": report.summary,
        "calibration": report.calibration,
        "risk_coverage": report.curve,
        "gate": settings.evidence.answerability.fitted_on,
        "operating_point": answer_at,
        "rows": report.rows,
    }
    if plot:
        plot_risk_coverage(
            {answer_set.name: report.curve},
            plot,
            {answer_set.name: answer_at},
            f"{answer_set.name} ({runtime.engine.name})",
        )
    if output:
        output.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    if as_json:
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        return
    summary = report.summary
    table = Table(
        title=f"{answer_set.name}: {summary['questions']} questions "
        f"({runtime.engine.name}, {runtime.engine.process})"
    )
    table.add_column("figure")
    table.add_column("value", justify="right")
    for label, key in (
        ("answered right (cited source answers)", "answered_right"),
        ("answers citing a wrong source", "wrong_source_answers"),
        ("refused right", "refused_right"),
        ("precision of answers", "precision"),
        ("gold-evidence token recall", "evidence_recall"),
        ("LLM calls per turn", "llm_calls"),
        ("p50 seconds", "p50_s"),
        ("p95 seconds", "p95_s"),
    ):
        table.add_row(label, str(summary[key]))
    console.print(table)
    curve = Table(title="calibration of the answerability gate")
    for column in ("probability", "questions", "share answerable"):
        curve.add_column(column, justify="right")
    for band in report.calibration:
        curve.add_row(band["probability"], str(band["questions"]), str(band["answerable"]))
    console.print(curve)
    risk = Table(
        title=f"risk-coverage of the {payload['gate']} gate (operating point "
        f"{payload['operating_point']:g})"
    )
    for column in ("threshold", "answered", "precision", "coverage"):
        risk.add_column(column, justify="right")
    for point in report.curve[::2]:
        risk.add_row(
            f"{point['threshold']:g}",
            str(point["answered"]),
            str(point["precision"]),
            str(point["coverage"]),
        )
    console.print(risk)
    if plot:
        console.print(f"risk-coverage curve written to {plot}")


if __name__ == "__main__":
    app()
