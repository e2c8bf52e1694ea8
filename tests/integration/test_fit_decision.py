"""The decision's fit is reproducible: a small fit of the written sets gives the card it
committed (training/fit_small_card.json), inputs' hashes and models alike; and the shipped
assets name the rule set they were fitted with."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from config.settings import FITTED_ANSWERABILITY, FITTED_PAGE_CHOICE
from tasks.rules import RULES_VERSION
from tests.conftest import REPO

pytestmark = pytest.mark.integration
SMALL_CARD = REPO / "training" / "fit_small_card.json"
SMALL_FIT = ["--sets", "written", "--limit", "4"]


def test_a_small_fit_reproduces_its_card(tmp_path):
    card = tmp_path / "card.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "training.fit_decision",
            *SMALL_FIT,
            "--cache",
            str(tmp_path / "cache"),
            "--card",
            str(card),
        ],
        cwd=REPO,
        check=True,
        capture_output=True,
        timeout=900,
    )
    got, committed = json.loads(card.read_text()), json.loads(SMALL_CARD.read_text())
    for key in ("inputs", "rows", "rows_by_set", "rules_version", "answer_at", "refuse_below"):
        assert got[key] == committed[key], key
    for model in ("page_choice", "gate"):
        assert got["models"][model].keys() == committed["models"][model].keys()
        for name, weight in committed["models"][model].items():
            assert got["models"][model][name] == pytest.approx(weight, abs=1e-3), (model, name)


def test_the_shipped_models_name_the_rules_they_were_fitted_with():
    for path in (FITTED_ANSWERABILITY, FITTED_PAGE_CHOICE):
        assert yaml.safe_load(path.read_text())["rules"] == RULES_VERSION, path.name
