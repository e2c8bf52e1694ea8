"""The turn's topology, once: which step follows which, on which route. Both engines wire it
(the AutoGen ``GraphFlow``'s edges and the selector's policy are built from ``EDGES``, the CrewAI
``Flow``'s listeners take their routes from it, a test checks both) and the README's diagram
is generated from it (``mermaid()``; a test checks that the README shows it).

Nodes are the AutoGen participants' names; on CrewAI ``verifier`` is the respond task's
guardrail and ``closer`` the Flow's ``finish``.

Usage::

    next_node("evidence_gate", "ask_judge")   # "judge"
    routes_into("closer")                     # ("done", "handoff", "refuse")
    print(mermaid())
"""

from __future__ import annotations

from typing import NamedTuple


class Edge(NamedTuple):
    source: str
    route: str | None  # None: always, once the source step is done
    target: str


NODES = (
    "context",
    "reformulator",
    "retriever",
    "evidence_gate",
    "judge",
    "responder",
    "verifier",
    "closer",
)
EDGES: tuple[Edge, ...] = (
    Edge("context", "rewrite", "reformulator"),
    Edge("context", "as_is", "retriever"),
    Edge("context", "handoff", "closer"),
    Edge("context", "refuse", "closer"),
    Edge("reformulator", None, "retriever"),
    Edge("retriever", None, "evidence_gate"),
    Edge("evidence_gate", "retry", "reformulator"),
    Edge("evidence_gate", "ask_judge", "judge"),
    Edge("evidence_gate", "answer", "responder"),
    Edge("evidence_gate", "refuse", "closer"),
    Edge("judge", "retry", "reformulator"),
    Edge("judge", "answer", "responder"),
    Edge("judge", "refuse", "closer"),
    Edge("judge", "handoff", "closer"),
    Edge("responder", None, "verifier"),
    Edge("verifier", "revise", "responder"),
    Edge("verifier", "done", "closer"),
)
ENTRY = "context"
END = "closer"


def edges_from(source: str) -> list[Edge]:
    return [e for e in EDGES if e.source == source]


def next_node(source: str, route: str | None) -> str:
    """The step after ``source`` on ``route`` (its unconditional successor first); the
    closer when the table has no such edge."""
    for edge in edges_from(source):
        if edge.route is None or edge.route == route:
            return edge.target
    return END


def routes_into(target: str) -> tuple[str, ...]:
    """The routes that lead to ``target`` from any step, sorted."""
    return tuple(sorted({e.route for e in EDGES if e.target == target and e.route}))


def mermaid() -> str:
    """The topology as a mermaid flowchart (the README's diagram)."""
    lines = ["graph LR"]
    for edge in EDGES:
        arrow = f" -- {edge.route} --> " if edge.route else " --> "
        lines.append(f"  {edge.source}{arrow}{edge.target}")
    return "\n".join(lines)
