import pytest

from config.settings import load_settings
from storage.qdrant.store import AllOf, AnyOf, Match, Missing
from storage.retrieval.filters import SlotError, build_filters

RULES = load_settings().slots


def parts(condition) -> list:
    if condition is None:
        return []
    return list(condition.conditions) if isinstance(condition, AllOf) else [condition]


def test_missing_slots_still_enforce_the_safest_view():
    plan = build_filters(RULES, {})
    conditions = parts(plan.enforced)
    assert Match("access", ("public",)) in conditions
    assert Missing("tiers") in conditions  # only documents open to every tier
    assert Missing("customer_id") in conditions
    assert plan.advisory is None


def test_access_level_admits_levels_at_or_below():
    plan = build_filters(RULES, {"access_level": "customer"})
    assert Match("access", ("public", "customer")) in parts(plan.enforced)


def test_a_tier_outside_the_plans_is_refused_not_a_filter_that_hides_every_page():
    from storage.retrieval.filters import admits

    with pytest.raises(SlotError, match="slot tier: 'enterprize' is not one of basic, pro, enterprise"):
        build_filters(RULES, {"tier": "enterprize"})
    with pytest.raises(SlotError, match="'platinum' is not one of"):
        admits(RULES, {"tier": "platinum"}, {"tiers": ["enterprise"]})
    assert admits(RULES, {"tier": "enterprise"}, {"tiers": ["enterprise"], "access": "public"}) == []


def test_a_rule_lists_values_only_where_they_are_not_levels():
    from pydantic import ValidationError

    from config.settings import SlotRule

    with pytest.raises(ValidationError, match="'values' lists a non-empty set"):
        SlotRule(field="access", mode="enforced", match="at_most", levels=["a"], values=["a"])
    with pytest.raises(ValidationError, match="default 'gold' is not one of values"):
        SlotRule(
            field="tiers", mode="enforced", match="contains_or_absent", values=["pro"], default="gold"
        )


def test_tier_admits_unrestricted_or_matching_documents():
    plan = build_filters(RULES, {"tier": "basic"})
    assert AnyOf((Missing("tiers"), Match("tiers", ("basic",)))) in parts(plan.enforced)


def test_unknown_access_level_is_refused():
    with pytest.raises(SlotError, match="access_level: 'admin' is not one of"):
        build_filters(RULES, {"access_level": "admin"})


def test_unknown_slot_is_refused_when_strict_and_ignored_otherwise():
    with pytest.raises(SlotError, match="unknown slot 'colour'"):
        build_filters(RULES, {"colour": "red"})
    assert build_filters(RULES, {"colour": "red"}, strict=False).enforced is not None


@pytest.mark.parametrize("value", [["basic", "enterprise"], {"$ne": "x"}, 3.5, True])
def test_enforced_slot_must_be_one_text_value(value):
    with pytest.raises(SlotError, match="expected one text value"):
        build_filters(RULES, {"tier": value})


@pytest.mark.parametrize(
    "advisory",
    [
        {"access_level": "internal"},
        {"access": "internal"},
        {"tier": "enterprise"},
        {"tiers": "enterprise"},
        {"customer_id": "someone-else"},
        {"tenant": "other"},
    ],
)
def test_advisory_filters_can_never_touch_enforced_ones(advisory):
    base = build_filters(RULES, {"tier": "basic", "access_level": "customer"})
    hostile = build_filters(RULES, {"tier": "basic", "access_level": "customer"}, advisory)
    assert hostile.enforced == base.enforced
    assert hostile.advisory is None
    assert hostile.ignored and "enforced" in hostile.ignored[0]


def test_advisory_filters_narrow_and_unknown_ones_are_reported():
    plan = build_filters(RULES, {"access_level": "public"}, {"product": "cloud", "mood": "x"})
    assert plan.advisory == AnyOf((Missing("product"), Match("product", ("cloud",))))
    assert plan.ignored == ["mood: not a known filter"]
    assert plan.applied["product"].startswith("advisory")


def test_session_slot_wins_over_model_advisory():
    plan = build_filters(RULES, {"product": "api"}, {"product": "cloud"})
    assert plan.advisory == AnyOf((Missing("product"), Match("product", ("api",))))


def test_blank_slot_counts_as_missing():
    assert build_filters(RULES, {"tier": "  "}).enforced == build_filters(RULES, {}).enforced
