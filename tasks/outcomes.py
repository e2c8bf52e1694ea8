"""What a conversation achieved, labelled from its own record so that anyone can audit it.

One label per conversation, from its turns, the customer's feedback and its header, with the
evidence that justifies it (turn indices, feedback, timestamps):

    confirmed           the last question was answered (or got "this article may help") and
                        the customer marked that reply helpful, asking nothing after it
    assumed             the last question was answered and the customer left: quiet for
                        ``outcome_after_s`` (or the conversation was closed) without asking
                        again, for a person, or marking the answer not helpful
    suggested           the last question got "this article may help" (not marked)
    unanswered          the last question got "I could not find this" (or failed, or its
                        answer or suggested article was marked not helpful)
    handed_off          a person was asked for (by the customer or the assistant), and no
                        person resolved it: it still waits, the customer left it before a
                        person replied, or staff closed it without a reply
    resolved_by_person  ... and a person replied and resolved it
    reopened            confirmed or assumed, but the same customer came back on the same
                        topic within ``reopen_within_s``: not counted as resolved
    pending             still going: not quiet for ``outcome_after_s`` and not closed (a
                        person resolved it, or the customer answered or closed the closing
                        question after their last message)

Messages of courtesy alone ("Thanks, bye") and yes / no replies to the offer of a person are
not questions (``tasks/message_kind.py``); a conversation whose customer wrote again after the
answer and got only the courtesy reply ("Can you help me?") is never ``assumed``.
Rates (``daily_rates``): involvement = conversations with a question; resolution =
(confirmed + assumed) / involved (reopened ones are not in it, nor those an anonymous
visitor's mark confirmed: ``anonymous_confirmed_rate``, shown apart); hand-off, unanswered and
suggested likewise over the involved; satisfaction = helpful marks / all marks (on any reply:
a mark on a refusal or a hand-off line counts here and changes no label); csat = conversations
whose customer answered "Did we solve your problem today?" yes / those that answered it (the
conversation's own answer, kept beside its label: a "no" makes no label); the response rate =
those that answered / those asked (answered + closed the question unanswered, ``skipped``).

Usage::

    outcome = label(header, turns, feedback, now=time.time(), outcome_after_s=86400)
    outcome.label, outcome.evidence        # "assumed", {"answered_turn": 2, "quiet_since": ...}
    reopened(outcomes, same_topic, reopen_within_s=7 * 86400)
    daily_rates(outcomes, feedback)
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, get_args

from pydantic import BaseModel, Field

from storage.memory import ANONYMOUS, WAITING_FOR_AGENT, StoredTurn
from tasks.message_kind import asked_something, kind_of

Label = Literal[
    "confirmed",
    "assumed",
    "suggested",
    "unanswered",
    "handed_off",
    "resolved_by_person",
    "reopened",
    "pending",
]
RESOLVED: tuple[Label, ...] = ("confirmed", "assumed")
LABELS: tuple[Label, ...] = get_args(Label)
# the verdicts whose mark on the last question decides the label: "helpful" confirms (an
# answer, or the article "this article may help" offered: the customer says it helped), "not
# helpful" makes it unanswered. A mark on "I could not find this" or a hand-off line changes no
# label (it counts in satisfaction only): "helpful" on a refusal is no resolution.
MARKED = {
    "answered": "the customer marked the last answer helpful",
    "suggest": "the customer marked the article suggested for the last question helpful",
}
# what the customer read, in the words a lead reads it (the stored verdict stays in evidence)
UNANSWERED_BY = {
    "idk": '"I could not find this"',
    "error": "an error",
    "handoff": "the offer of a person, not taken up",
}
# an assumed resolution is verified when the decision was at least this sure that the page
# answers (every answer is grounded: a draft the support check passed, or the page's quote);
# stricter than the gate's answer_at, where its dev curves already read precision 0.95
VERIFIED_AT = 0.8


Csat = Literal["yes", "no", "skipped", ""]


class OutcomeBase(BaseModel):
    """One conversation's label and what justifies it: what every reader of an outcome sees
    (:class:`Outcome` is the stored record; the lead's report answers
    ``service.domain.outcomes.ConversationOutcome``, its pages within the reader's reach)."""

    session_id: str
    customer_id: str
    day: str  # the day the conversation started (UTC, ISO)
    label: Label
    why: str
    questions: int
    started: float
    last_activity: float
    evidence: dict[str, Any] = Field(default_factory=dict)
    topic: list[str] = Field(default_factory=list)  # pages its answers cited
    first_question: str = ""
    # the page it is about: the page the question it turns on was answered from, else
    # (``OutcomeStore.refresh``, ``service.domain.topics.conversation_topic``) the page nearest that
    # question within the reach of the slots it was asked under; "" where none is near
    topic_id: str = ""
    # confirmed by an anonymous visitor's mark: any throwaway session can make one
    anonymous_mark: bool = False
    # resolved and trusted: confirmed by a customer who signed in, or assumed after an answer
    # the decision was sure of (``VERIFIED_AT``)
    verified: bool = False
    # the customer's answer to "Did we solve your problem today?": "yes", "no", "skipped"
    # (asked, closed unanswered) or "" (not asked)
    csat: Csat = ""


class Outcome(OutcomeBase):
    """The stored outcome: what every reader sees, and what the breakdowns by page read."""

    # the pages the last question's answer cited (the last the assistant handled: not a
    # message to a person): what the label says of (a hand-off after an unanswered question
    # is not the fault of an earlier answer's page)
    decided_by: list[str] = Field(default_factory=list)
    # per cited page, the customer's marks on the answers that cited it: {"up": n, "down": n}
    marks: dict[str, dict[str, int]] = Field(default_factory=dict)

    def row(self) -> dict[str, Any]:
        """Its fields as a dict (shallow: a report builds one per conversation it shows)."""
        return dict(self)


def _questions(turns: Sequence[StoredTurn]) -> list[StoredTurn]:
    return [t for t in turns if asked_something(t)]


def _last_handled(asked: Sequence[StoredTurn]) -> StoredTurn:
    """The last question the assistant handled: messages written to a person after a hand-off
    are never answered by it, so the page it last answered from is the one the hand-off came
    right after."""
    return next((t for t in reversed(asked) if t.get("status") != WAITING_FOR_AGENT), asked[-1])


def page_marks(
    turns: Sequence[StoredTurn], feedback: Sequence[Mapping[str, Any]]
) -> dict[str, dict[str, int]]:
    """Per page, the marks on the answers that cited it (each mark counts once per page).

    >>> page_marks([{"turn_index": 0, "citations": ["a.md"]}, {"turn_index": 1, "citations": []}],
    ...            [{"turn_index": 0, "rating": "up"}, {"turn_index": 1, "rating": "down"}])
    {'a.md': {'up': 1, 'down': 0}}
    """
    cited = {int(t["turn_index"]): set(t.get("citations", [])) for t in turns if "turn_index" in t}
    found: dict[str, dict[str, int]] = {}
    for mark in feedback:
        rating = mark.get("rating")
        if rating not in ("up", "down"):
            continue
        for page in sorted(cited.get(int(mark["turn_index"]), ())):
            found.setdefault(str(page), {"up": 0, "down": 0})[rating] += 1
    return found


def _unclosed_courtesy(turns: Sequence[StoredTurn], after: int) -> int | None:
    """The first customer message after turn ``after`` that got only the courtesy reply and was
    no thanks or goodbye ("Can you help me?"): the customer wrote again and was not helped."""
    return next(
        (
            int(t["turn_index"])
            for t in turns
            if int(t.get("turn_index", -1)) > after and t.get("user") and kind_of(t) == "greeting"
        ),
        None,
    )


def _closed_by_customer(header: Mapping[str, Any], last_activity: float) -> bool:
    """The customer answered the closing question, or closed it unanswered, after their last
    message: they ended the conversation, nothing is left to wait for.

    >>> _closed_by_customer({"csat_solved": False, "csat_at": 20.0}, last_activity=10.0)
    True
    >>> _closed_by_customer({"csat_solved": True, "csat_at": 20.0}, last_activity=30.0)
    False
    """
    ended = header.get("csat_at") if header.get("csat_solved") is not None else None
    ended = ended or header.get("csat_skipped_at")
    return ended is not None and float(ended) >= last_activity


def label(
    header: Mapping[str, Any],
    turns: Sequence[StoredTurn],
    feedback: Sequence[Mapping[str, Any]],
    now: float,
    outcome_after_s: float,
) -> Outcome | None:
    """The conversation's outcome (None: the customer asked nothing, not an involvement)."""
    asked = _questions(turns)
    if not asked:
        return None
    started = float(header.get("created", asked[0].get("ts", now)))
    last_activity = max(float(t.get("ts", started)) for t in turns)
    ratings = {int(f["turn_index"]): f for f in feedback}
    last = asked[-1]
    index = int(last["turn_index"])
    topic = sorted({c for t in asked for c in t.get("citations", [])})
    outcome = Outcome(
        session_id=str(header["session_id"]),
        customer_id=str(header.get("customer_id", "")),
        day=day_of(started),
        label="pending",
        why="",
        questions=len(asked),
        started=started,
        last_activity=last_activity,
        topic=topic,
        first_question=str(asked[0]["user"])[:300],
        topic_id=_answered_from(_last_handled(asked)),
        decided_by=sorted({str(c) for c in _last_handled(asked).get("citations", [])}),
        marks=page_marks(turns, feedback),
    )
    evidence: dict[str, Any] = {"last_question_turn": index, "verdict": last.get("verdict")}
    if index in ratings:
        evidence["feedback"] = {k: ratings[index].get(k) for k in ("rating", "comment", "ts")}
    closed = header.get("status") == "resolved" or _closed_by_customer(header, last_activity)
    quiet = now - last_activity >= outcome_after_s
    verdict = last.get("verdict")
    rating = ratings.get(index, {}).get("rating")
    if header.get("csat_solved") is not None:  # the closing question: beside the label, never it
        outcome.csat = "yes" if header["csat_solved"] else "no"
        evidence["csat"] = {"solved": bool(header["csat_solved"]), "ts": header.get("csat_at")}
    elif header.get("csat_skipped_at"):
        outcome.csat = "skipped"
        evidence["csat"] = {"skipped": True, "ts": header["csat_skipped_at"]}
    if header.get("handoff_at"):
        evidence.update(handoff_at=header["handoff_at"], handoff_reason=header.get("handoff_reason", ""))
        outcome.label, outcome.why = "handed_off", _handoff_ending(header, closed, evidence)
        if evidence.get("resolved_by"):
            outcome.label = "resolved_by_person"
    elif rating == "up" and verdict in MARKED:
        outcome.label, outcome.why = "confirmed", MARKED[verdict]
        outcome.verified = not outcome.customer_id.startswith(ANONYMOUS)
        if outcome.customer_id.startswith(ANONYMOUS):
            outcome.anonymous_mark = True
            outcome.why += " (an anonymous visitor: unverified, a throwaway session can do it)"
    elif rating == "down" and verdict in MARKED:
        outcome.label = "unanswered"
        outcome.why = MARKED[verdict].replace("helpful", "not helpful")
    elif verdict == "answered":
        if (after := _unclosed_courtesy(turns, index)) is not None and (quiet or closed):
            evidence["courtesy_turn"] = after
            outcome.label = "unanswered"
            outcome.why = "the customer wrote again after the answer and got only the courtesy reply"
        elif quiet or closed:
            outcome.label = "assumed"
            outcome.why = "answered; the customer left without asking again"
            evidence["quiet_since"] = last_activity
            sure = last.get("probability")
            evidence.update(probability=sure, drafted=last.get("drafted"))
            outcome.verified = sure is not None and float(sure) >= VERIFIED_AT
        else:
            outcome.why = f"answered; not quiet for {outcome_after_s:g} s yet"
    elif not (quiet or closed):
        outcome.why = f"not quiet for {outcome_after_s:g} s yet"
    elif verdict == "suggest":
        outcome.label, outcome.why = "suggested", "the last question got an article that may help"
    else:
        got = UNANSWERED_BY.get(str(verdict), f"the verdict {verdict!r}")
        outcome.label, outcome.why = "unanswered", f"the last question got {got}"
    outcome.evidence = evidence
    return outcome


def _answered_from(turn: StoredTurn) -> str:
    """The page a question was answered from (its first citation), "" when it was not
    answered (a page only suggested is no answer)."""
    cited = turn.get("citations") or []
    return str(cited[0]) if turn.get("verdict") == "answered" and cited else ""


def _handoff_ending(header: Mapping[str, Any], closed: bool, evidence: dict[str, Any]) -> str:
    """Why a handed-off conversation is where it is, its evidence added: resolved by a person
    (``resolved_by`` in the evidence: the label is ``resolved_by_person``), left by the
    customer, closed by staff without a reply, or still waiting.

    >>> found = {}
    >>> _handoff_ending({"status": "resolved", "resolved_by": "ana", "closed_without_reply": True,
    ...                  "resolved_at": 9.0}, True, found), found
    ('handed off, then closed by ana without a reply', {'closed_by': 'ana', 'closed_at': 9.0})
    """
    if header.get("left_at"):
        evidence["left_at"] = header["left_at"]
        if header.get("closed_without_reply"):
            return "handed off; the customer left before a person replied"
        return "handed off; a person replied, then the customer left without it being resolved"
    if closed and header.get("resolved_by"):
        if header.get("closed_without_reply"):
            evidence.update(closed_by=header["resolved_by"], closed_at=header.get("resolved_at"))
            return f"handed off, then closed by {header['resolved_by']} without a reply"
        evidence.update(resolved_by=header["resolved_by"], resolved_at=header.get("resolved_at"))
        return "handed off, then resolved by a person"
    return "handed off to a person, not resolved yet"


def reopened(
    outcomes: Iterable[Outcome],
    same_topic: Callable[[Outcome, Outcome], bool],
    reopen_within_s: float,
) -> list[Outcome]:
    """``outcomes`` with a resolved one relabelled ``reopened`` when the same customer started
    another conversation on the same topic within ``reopen_within_s`` of its last activity."""
    ordered = sorted(outcomes, key=lambda o: o.started)
    by_customer: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in ordered:
        by_customer[outcome.customer_id].append(outcome)
    for mine in by_customer.values():
        for position, earlier in enumerate(mine):
            if earlier.label not in RESOLVED:
                continue
            for later in mine[position + 1 :]:
                if later.started - earlier.last_activity > reopen_within_s:
                    break
                if same_topic(earlier, later):
                    earlier.evidence["reopened_by"] = later.session_id
                    earlier.evidence["was"] = earlier.label
                    earlier.label, earlier.why = "reopened", "the customer came back on the same topic"
                    break
    return ordered


def shared_pages(earlier: Outcome, later: Outcome) -> bool:
    """The simplest same topic: the later conversation's answers cite a page the earlier's did.

    >>> common = {"customer_id": "c", "label": "assumed", "why": "", "questions": 1}
    >>> a = Outcome(session_id="a", day="2026-12-01", started=0.0, last_activity=1.0,
    ...             topic=["billing/refunds.md"], **common)
    >>> b = Outcome(session_id="b", day="2026-12-02", started=5.0, last_activity=6.0,
    ...             topic=["billing/refunds.md"], **common)
    >>> shared_pages(a, b)
    True
    """
    return bool(set(earlier.topic) & set(later.topic))


def day_of(ts: float) -> str:
    """The UTC day of a timestamp.

    >>> day_of(86400.0 * 365)
    '1971-01-01'
    """
    return dt.datetime.fromtimestamp(ts, dt.UTC).date().isoformat()


def day_row(
    day: str,
    counts: Mapping[str, int],
    helpful: int,
    given: int,
    confirmed_anonymous: int = 0,
    verified: int = 0,
    csat_yes: int = 0,
    csat_answers: int = 0,
    csat_skipped: int = 0,
) -> dict[str, Any]:
    """One day's counts by label and its rates over the decided conversations (not pending;
    None: none decided), with satisfaction from that day's marks, and how many of the
    confirmed ones an anonymous visitor's mark confirmed (flagged: unverifiable, so out of
    the resolution rate and counted apart in ``anonymous_confirmed_rate``), and of its
    conversations how many answered the closing question and how many said yes (``csat_rate``),
    and how many closed it unanswered (``csat_response_rate``: answered / asked).

    >>> row = day_row("2026-12-01", {"assumed": 3, "handed_off": 1}, helpful=1, given=2)
    >>> row["resolution_rate"], row["handoff_rate"], row["satisfaction"]
    (0.75, 0.25, 0.5)
    """
    by_label: dict[str, Any] = {name: int(counts.get(name, 0)) for name in LABELS}
    involved = sum(by_label.values())
    decided = involved - by_label["pending"]

    def share(count: int) -> float | None:
        return round(count / decided, 3) if decided else None

    def rate(*names: str) -> float | None:
        return share(sum(by_label[n] for n in names))

    resolved = sum(by_label[n] for n in RESOLVED)
    return {
        "day": day,
        "involved": involved,
        **by_label,
        "confirmed_anonymous": confirmed_anonymous,
        "verified": verified,
        # an anonymous visitor's "helpful" is anyone's to give: shown apart, never a resolution
        "resolution_rate": share(resolved - confirmed_anonymous),
        "anonymous_confirmed_rate": share(confirmed_anonymous),
        "handoff_rate": rate("handed_off", "resolved_by_person"),
        "unanswered_rate": rate("unanswered"),
        "suggested_rate": rate("suggested"),
        "satisfaction": round(helpful / given, 3) if given else None,
        "feedback": given,
        "helpful": helpful,
        "csat_answers": csat_answers,
        "csat_yes": csat_yes,
        "csat_rate": round(csat_yes / csat_answers, 3) if csat_answers else None,
        "csat_skipped": csat_skipped,
        "csat_response_rate": response_rate(csat_answers, csat_skipped),
    }


def response_rate(answers: int, skipped: int) -> float | None:
    """The share of the customers asked the closing question who answered it (None: nobody
    was asked).

    >>> response_rate(3, 1), response_rate(0, 0)
    (0.75, None)
    """
    asked = answers + skipped
    return round(answers / asked, 3) if asked else None


def daily_rates(
    outcomes: Iterable[Outcome], feedback: Iterable[Mapping[str, Any]] = ()
) -> list[dict[str, Any]]:
    """Per day: involved conversations, each label's count, the rates over the decided ones
    and satisfaction from that day's marks, the closing answers of its conversations
    (``day_row``)."""
    days: dict[str, Counter[str]] = defaultdict(Counter)
    anonymous: Counter[str] = Counter()
    verified: Counter[str] = Counter()
    csat: dict[str, Counter[str]] = defaultdict(Counter)
    for outcome in outcomes:
        csat[outcome.day][outcome.csat] += 1
        days[outcome.day][outcome.label] += 1
        anonymous[outcome.day] += outcome.label == "confirmed" and outcome.anonymous_mark
        verified[outcome.day] += outcome.label in RESOLVED and outcome.verified
    marks: dict[str, Counter[str]] = defaultdict(Counter)
    for mark in feedback:
        marks[day_of(float(mark.get("ts", 0.0)))][str(mark.get("rating"))] += 1
    return [
        day_row(
            day,
            days[day],
            marks[day]["up"],
            marks[day]["up"] + marks[day]["down"],
            anonymous[day],
            verified[day],
            csat_yes=csat[day]["yes"],
            csat_answers=csat[day]["yes"] + csat[day]["no"],
            csat_skipped=csat[day]["skipped"],
        )
        for day in sorted(set(days) | set(marks))
    ]
