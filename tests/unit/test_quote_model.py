"""The quote model (tasks/quote_model.py): which units of the answering passage to quote."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from config.settings import FITTED_QUOTE, QuoteModel, fitted_quote, load_settings
from tasks.answerability import Focus, quote
from tasks.decision import check_models
from tasks.decision_features import UnitFeatures
from tasks.passage_text import split_units
from tasks.quote_model import quote_focus, unit_features
from training.quote_fit import earns_its_place

PAGE = (
    "Once a refund is approved, the money is returned within 5 to 7 business days. "
    "Card issuers sometimes need up to 10 business days to show the credit. "
    "Our team checks every refund by hand. "
    "Refunds to PayPal usually arrive within 2 business days."
)


class ScriptedReader:
    """A test double for the cross-encoder: high for the windows that hold ``liked`` and do
    not open the page."""

    def __init__(self, liked: str) -> None:
        self.liked = liked

    def answerable(self, question: str, texts: list[str]) -> list[float]:
        return [0.9 if self.liked in t and "approved" not in t else 0.1 for t in texts]


def test_a_shipped_quote_model_weighs_every_unit_feature_and_says_what_it_was_fitted_on():
    """quote.yaml ships only when training/quote_fit.py measured it beating the window reading
    on the pack's held-out folds; without it nothing is read for the quote."""
    model = fitted_quote()
    if FITTED_QUOTE.exists():
        assert model.features == list(UnitFeatures.model_fields)
        assert len(model.weights) == len(model.features)
        assert "training-pack" in model.fitted_on
    else:
        assert model.weights == [] and not load_settings().evidence.quote.weights


def test_the_quote_model_ships_only_when_it_beats_the_window_reading():
    figures = {"window reading": {"recall": 0.7}, "quote model (held out)": {"recall": 0.71}}
    assert earns_its_place(figures)
    figures["quote model (held out)"]["recall"] = 0.7
    assert not earns_its_place(figures)


def test_a_quote_model_weighing_an_unknown_feature_is_refused_naming_it():
    evidence = load_settings().evidence
    wrong = QuoteModel(features=["learnt"], mean=[0.0], scale=[1.0], weights=[1.0])
    with pytest.raises(ValueError, match=r"quote model .* weighs 'learnt'"):
        check_models(evidence.model_copy(update={"quote": wrong}))


def test_without_a_fitted_model_the_window_reading_picks():
    units = tuple(split_units(PAGE))
    focus = Focus(0, units, (0.2, 0.3, 0.1, 0.9))
    assert quote_focus(ScriptedReader("Card"), QuoteModel(), "q", focus) is focus  # type: ignore[arg-type]


def test_the_model_quotes_the_unit_the_cross_encoder_reads_as_answering():
    units = tuple(split_units(PAGE))
    focus = Focus(0, units, (0.2, 0.3, 0.1, 0.9))  # the window reading prefers PayPal's sentence
    learned_only = QuoteModel(
        features=["learned_share", "best_reading"], mean=[0.5, 0.5], scale=[0.5, 0.5], weights=[4.0, 0.5]
    )
    reader = ScriptedReader("Card issuers")
    where = quote_focus(reader, learned_only, "my card refund", focus)  # type: ignore[arg-type]
    picked = quote(where, "my card refund", max_words=12)
    assert picked[0].startswith("Card issuers")
    assert not any("PayPal" in s for s in picked)


@given(st.lists(st.floats(0, 5), min_size=1, max_size=12), st.data())
def test_unit_features_are_shares_with_one_best_unit(values, data):
    units = tuple(split_units(" ".join(f"Sentence number {i} is here." for i in range(len(values)))))
    learned = data.draw(st.lists(st.floats(0, 1), min_size=len(units), max_size=len(units)))
    rows = unit_features(Focus(0, units, tuple(values[: len(units)])), learned)
    assert len(rows) == len(units)
    assert sum(r.best_reading for r in rows) == 1
    assert all(0 <= r.reading <= 1 and 0 <= r.learned_share <= 1 for r in rows)
    assert all(0 <= r.position <= 1 for r in rows)
