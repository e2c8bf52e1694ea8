import pytest

from config.settings import ConfigError
from evaluation.kickoff import Expectation, check, load_script
from tasks.schemas import Citation, TurnResult


def write(tmp_path, text):
    path = tmp_path / "script.yaml"
    path.write_text(text)
    return path


def test_the_bundled_script_loads():
    from tests.conftest import REPO

    script = load_script(REPO / "examples" / "kickoff" / "support-demo.yaml")
    assert script.conversations[0].turns[0].expect.cites == ["billing/refunds.md"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("conversations: []\n", "conversations"),
        ("conversations:\n  - id: a\n    turns: []\n", "conversations.0.turns"),
        ("conversations:\n  - id: a\n    turns: [{user: hi, expect: {verdict: maybe}}]\n", "verdict"),
        ("conversations:\n  - id: a\n    turns: [{user: hi, wat: 1}]\n", "wat"),
        (
            "conversations:\n  - {id: a, turns: [{user: x}]}\n  - {id: a, turns: [{user: y}]}\n",
            "duplicate conversation ids",
        ),
        ("conversations: [unclosed\n", "not valid YAML"),
        (
            "conversations:\n  - {id: a, customer_id: 'c-trailing ', turns: [{user: x}]}\n",
            "conversation 'a': customer_id 'c-trailing ' has leading or trailing spaces",
        ),
        ("conversations:\n  - {id: a, turns: [{user: x, closing: no}]}\n", "either a customer message"),
        (
            "conversations:\n  - {id: a, turns: [{expect: {closes: true}}]}\n",
            "either a customer message",
        ),
        (
            "conversations:\n  - {id: a, turns: [{closing: no, expect: {verdict: idk}}]}\n",
            r"checked by contains and offers_person only, not \['verdict'\]",
        ),
    ],
)
def test_bad_scripts_are_named(tmp_path, text, message):
    with pytest.raises(ConfigError, match=message):
        load_script(write(tmp_path, text))


def test_a_missing_script_is_named_a_script(tmp_path):
    with pytest.raises(ConfigError, match=r"nope\.yaml: kickoff script not found"):
        load_script(tmp_path / "nope.yaml")


def test_expectations_report_every_failure():
    result = TurnResult(
        session_id="s",
        answer="Refunds take 5 days.",
        verdict="answered",
        citations=[Citation(source_id="billing/refunds.md", chunk_id="x#0")],
    )
    assert (
        check(Expectation(verdict="answered", cites=["billing/refunds.md"], contains=["5 days"]), result)
        == []
    )
    failures = check(
        Expectation(
            verdict="idk", cites=["a.md"], not_cites=["billing/refunds.md"], contains=["7 days"]
        ),
        result,
    )
    assert len(failures) == 4


def test_the_closing_script_loads_its_closing_answers():
    from tests.conftest import REPO

    script = load_script(REPO / "examples" / "kickoff" / "closing.yaml")
    turns = script.conversations[0].turns
    assert [t.user for t in turns[:2]] == ["How long does a refund take?", "bye"]
    assert turns[2].user is None and turns[2].closing is False  # YAML's "no"
    assert turns[2].expect.offers_person is True


def test_a_closing_answer_is_checked_by_what_the_customer_reads():
    from config.settings import Messages
    from evaluation.kickoff import check_closing
    from tasks.polite_replies import closing_reply

    no = closing_reply(Messages(), solved=False)
    assert check_closing(Expectation(contains=["A person from our team"], offers_person=True), no) == []
    yes = closing_reply(Messages(), solved=True)
    assert check_closing(Expectation(offers_person=True), yes) == [
        "offers a person: False, expected True"
    ]


def test_a_turn_that_should_close_and_offer_no_person_is_checked():
    bye = TurnResult(session_id="s", answer="Goodbye.", verdict="idk", kind="goodbye", closes=True)
    assert check(Expectation(closes=True, offers_person=False, contains=["Goodbye"]), bye) == []
    assert check(Expectation(closes=False), bye) == ["closes True, expected False"]
