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
