from pathlib import Path

import pytest

from config.settings import ConfigError, load_settings
from tasks.decision_features import GateFeatures
from tasks.operating_points import logistic_probability, operating_points


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "assistant.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_shipped_defaults_load_with_enforced_security_slots():
    settings = load_settings()
    assert settings.retrieval.pipeline == "hybrid+late"
    enforced = {n for n, r in settings.slots.items() if r.mode == "enforced"}
    assert {"tier", "access_level", "customer_id", "tenant"} <= enforced
    assert settings.slots["access_level"].default == "public"


def test_env_overrides_the_file(monkeypatch):
    monkeypatch.setenv("SUPPORTCREW_RETRIEVAL__TOP_K", "9")
    monkeypatch.setenv("SUPPORTCREW_QDRANT__URL", "http://qdrant.example:6333")
    settings = load_settings()
    assert settings.retrieval.top_k == 9
    assert settings.qdrant.url == "http://qdrant.example:6333"
    assert settings.qdrant.collection == "kb"


def test_unknown_key_is_named(tmp_path):
    with pytest.raises(ConfigError, match=r"retrievl: unknown key"):
        load_settings(write(tmp_path, "retrievl: {top_k: 3}\n"))


def test_wrong_value_names_key_and_value(tmp_path):
    with pytest.raises(ConfigError) as caught:
        load_settings(write(tmp_path, "retrieval: {pipeline: magic}\n"))
    message = str(caught.value)
    assert "retrieval.pipeline" in message and "'magic'" in message
    assert "Traceback" not in message


def test_bad_env_value_is_named(monkeypatch):
    monkeypatch.setenv("SUPPORTCREW_RETRIEVAL__TOP_K", "many")
    with pytest.raises(ConfigError, match=r"retrieval.top_k"):
        load_settings()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("retrieval: [1, 2\n", "not valid YAML"),
        ("- just\n- a list\n", "expected a mapping"),
        ("slots: {tier: {field: tiers, mode: sometimes, match: equals_or_absent}}\n", "slots.tier.mode"),
        (
            "slots: {access_level: {field: access, mode: enforced, match: at_most}}\n",
            "needs a non-empty 'levels'",
        ),
        ("qdrant: {collection: 'bad name!'}\n", "qdrant.collection"),
        ("roles: {judge: sometimes}\n", "roles.judge"),
        ("roles: {summarise: model}\n", "roles.summarise"),
        (
            "evidence: {answerability: {features: [a, b], mean: [0], scale: [1], weights: [1], "
            "bias: 0}}\n",
            "same length",
        ),
        (
            "evidence: {answerability: {features: [a], mean: [0], scale: [0], weights: [1], bias: 0}}\n",
            "scale must be positive",
        ),
        (
            "evidence: {answerability: {features: [a], mean: [0], scale: [1], weights: [1], "
            "bias: 0, answer_at: 0.3, refuse_below: 0.6}}\n",
            "refuse_below must not exceed",
        ),
        # the second gate is gone: a configuration that still names it is told so
        ("evidence: {gate: learned}\n", "evidence.gate"),
        ("evidence: {learned: {page_margin: 0.1}}\n", "evidence.learned"),
        ("evidence: {target_precision: 0}\n", "evidence.target_precision"),
        (
            "evidence: {page_choice: {features: [a], mean: [0], scale: [1], weights: []}}\n",
            "same length",
        ),
        ("pilot: {encoder_threads: 0}\n", "pilot.encoder_threads"),
        ("pilot: {header_timeout_s: -1}\n", "pilot.header_timeout_s"),
        ("llm: {stream: sometimes}\n", "llm.stream"),
        ("evidence: {support_semantic_close: 1.5}\n", "evidence.support_semantic_close"),
        ("evidence: {support_lexical_close: -0.1}\n", "evidence.support_lexical_close"),
    ],
)
def test_malformed_files_give_one_clear_error(tmp_path, text, expected):
    with pytest.raises(ConfigError, match=expected):
        load_settings(write(tmp_path, text))


def test_the_service_encodes_with_its_own_thread_count_unless_embeddings_set_one(tmp_path):
    served = load_settings(write(tmp_path, "pilot: {encoder_threads: 3}\n")).for_serving()
    assert served.embeddings.threads == 3
    assert served.pilot.encoder_threads == 3
    chosen = load_settings(write(tmp_path, "embeddings: {threads: 2}\n")).for_serving()
    assert chosen.embeddings.threads == 2
    assert load_settings(write(tmp_path, "")).embeddings.threads is None  # the CLI: all cores


def test_missing_file_is_reported(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_settings(tmp_path / "nope.yaml")


def test_empty_file_means_defaults(tmp_path):
    assert load_settings(write(tmp_path, "")).retrieval.top_k == 5


def test_roles_take_the_evidence_path_with_the_local_model_only_on_auto():
    roles = load_settings().roles
    assert not roles.uses_model("respond", "local")
    assert roles.uses_model("respond", "openai/gpt-4o-mini")
    forced = roles.model_copy(update={"judge": "model", "respond": "evidence"})
    assert forced.uses_model("judge", "local")
    assert not forced.uses_model("respond", "openai/gpt-4o-mini")


def test_the_shipped_answerability_model_orders_its_probabilities():
    evidence = load_settings().evidence
    model = evidence.answerability
    weak = GateFeatures()
    strong = GateFeatures(
        **dict.fromkeys(GateFeatures.model_fields, 1.0) | {"missing_rare": 0.0, "code_unexplained": 0.0}
    )
    assert logistic_probability(model, strong) > model.answer_at > logistic_probability(model, weak)
    assert operating_points(evidence) == (
        model.answer_at,
        model.refuse_below,
    )


def test_a_staff_keys_display_name_is_one_plain_line():
    """What a customer reads when this person joins: a name, never markup or a control."""
    from pydantic import ValidationError

    from config.settings import ApiKey

    base = {"name": "ana", "sha256": "a" * 64, "role": "agent"}
    assert ApiKey(**base, display_name="Ana").display_name == "Ana"
    assert ApiKey(**base).display_name is None
    for bad in ("", "Ana\nHacker", "<b>Ana</b>", "x" * 81):
        with pytest.raises(ValidationError, match="display_name"):
            ApiKey(**base, display_name=bad)
