"""What a waiting customer is told while a turn runs: one plain label per kind of step.

``run_turn(request, runtime, on_step=...)`` tells a listener each step's name as it starts.

Usage::

    >>> progress_label("retrieve")
    'searching the help articles'
    >>> progress_label("something new")
    'working'

"""

from __future__ import annotations

LABELS = {
    "context": "reading the conversation",
    "intake": "reading your message",
    "manage": "the team lead is assigning the work",
    "reformulate": "understanding your question",
    "retrieve": "searching the help articles",
    "evidence_gate": "checking the evidence",
    "judge_gate": "checking the evidence",
    "respond": "writing the answer",
    "revise": "writing the answer",
    "support_check": "checking the answer against the articles",
    "verify": "checking the answer against the articles",
}


def progress_label(step: str) -> str:
    """The customer-facing label of a step (unknown steps: "working")."""
    return LABELS.get(step, "working")
