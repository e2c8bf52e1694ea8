"""The decision's word lists and patterns live in one versioned data file; a model fitted with
another version of it is refused at start, and a broken file names what is wrong."""

from __future__ import annotations

import pytest
import yaml

from config.settings import load_settings
from tasks.decision import check_models
from tasks.rules import RULES, RULES_FILE, RULES_VERSION, load_rules, rules_version


def test_the_rules_read_from_the_data_file():
    assert "hello" in RULES.courtesy and "hello" in RULES.small_talk
    assert "wondering" in RULES.small_talk and "wondering" not in RULES.courtesy
    assert RULES.how_quantity.sub(r"\1", "How long does it take?") == "How does it take?"
    assert len(RULES_VERSION) == 12


def test_the_version_follows_the_content_not_the_comments(tmp_path):
    content = yaml.safe_load(RULES_FILE.read_text())
    copy = tmp_path / "rules.yaml"
    copy.write_text("# another comment\n" + yaml.safe_dump(content))
    assert load_rules(copy)[1] == RULES_VERSION
    content["courtesy"] = [*content["courtesy"], "howdy"]
    assert rules_version(content) != RULES_VERSION


def test_a_model_fitted_with_other_rules_is_refused_at_start():
    evidence = load_settings().evidence
    stale = evidence.model_copy(
        update={"answerability": evidence.answerability.model_copy(update={"rules": "000000000000"})}
    )
    with pytest.raises(ValueError, match=r"fitted with rules 000000000000.*refit"):
        check_models(stale)
    check_models(evidence)  # the shipped models match the shipped rules


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda c: c.pop("small_talk"), "no 'small_talk'"),
        (lambda c: c.update(what_means="(unclosed"), "does not compile"),
    ],
)
def test_a_broken_rule_file_names_what_is_wrong(tmp_path, change, message):
    content = yaml.safe_load(RULES_FILE.read_text())
    change(content)
    broken = tmp_path / "rules.yaml"
    broken.write_text(yaml.safe_dump(content))
    with pytest.raises(ValueError, match=message):
        load_rules(broken)
