from pathlib import Path

import pytest

from config.settings import ConfigError, load_settings
from tasks.operating_points import learned_points, logistic_probability, operating_points


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
        ("evidence: {gate: neural}\n", "evidence.gate"),
        ("evidence: {learned: {page_margin: -0.1}}\n", "learned.page_margin"),
        ("evidence: {learned: {curve: []}}\n", "give answer_at or a curve"),
        (
            "evidence: {learned: {curve: [{threshold: 0.5, precision: 1, coverage: 0.2}, "
            "{threshold: 0.1, precision: 0.9, coverage: 0.8}]}}\n",
            "increasing order",
        ),
        ("evidence: {learned: {answer_at: 0.3, refuse_below: 0.6}}\n", "refuse_below must not exceed"),
        ("evidence: {learned: {answer_at: 1.5}}\n", "learned.answer_at"),
        ("evidence: {target_precision: 0}\n", "evidence.target_precision"),
        ("evidence: {learned: {curve: [{threshold: 0.5, precision: 2, coverage: 0}]}}\n", "precision"),
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


def test_the_target_precision_picks_the_threshold_from_the_curve(tmp_path):
    curve = (
        "[{threshold: 0.1, precision: 0.80, coverage: 0.9}, "
        "{threshold: 0.3, precision: 0.96, coverage: 0.8}, "
        "{threshold: 0.5, precision: 0.94, coverage: 0.7}, "
        "{threshold: 0.7, precision: 1.00, coverage: 0.5}]"
    )

    def gate(text):
        evidence = load_settings(write(tmp_path, "evidence: {gate: learned, " + text)).evidence
        return operating_points(evidence)

    # every point from the threshold on must reach the target: 0.5 misses 0.95, so 0.7
    assert gate(f"target_precision: 0.95, learned: {{curve: {curve}}}}}\n")[0] == 0.7
    answer_at, refuse_below = gate(f"target_precision: 0.9, learned: {{curve: {curve}}}}}\n")
    assert answer_at == 0.3 and refuse_below == pytest.approx(0.2)
    # nothing reaches it: the strictest point
    assert (
        gate(
            "target_precision: 1.0, learned: {curve: [{threshold: 0.2, precision: 0.5, coverage: 1}]}}\n"
        )[0]
        == 0.2
    )
    explicit = gate(f"target_precision: 0.95, learned: {{curve: {curve}, answer_at: 0.42}}}}\n")
    assert explicit[0] == 0.42


def test_the_shipped_answerability_model_orders_its_probabilities():
    evidence = load_settings().evidence
    model = evidence.answerability
    weak = dict.fromkeys(model.features, 0.0)
    strong = dict.fromkeys(model.features, 1.0) | {"missing_rare": 0.0}
    assert logistic_probability(model, strong) > model.answer_at > logistic_probability(model, weak)
    assert evidence.gate == "logistic" and operating_points(evidence) == (
        model.answer_at,
        model.refuse_below,
    )


def test_the_shipped_learned_gate_reaches_its_target_on_dev():
    evidence = load_settings().evidence
    gate = evidence.learned
    assert gate.curve, "config/learned_answerability.yaml holds the dev curve"
    answer_at, refuse_below = learned_points(gate, evidence.target_precision)
    at = [p for p in gate.curve if p.threshold >= answer_at]
    assert at and all(p.precision >= evidence.target_precision for p in at)
    assert 0 < refuse_below <= answer_at < 1


def test_one_learned_key_from_the_environment_keeps_the_fitted_curve(monkeypatch):
    fitted = load_settings().evidence.learned
    monkeypatch.setenv("SUPPORTCREW_EVIDENCE__LEARNED__PAGE_MARGIN", "0.3")
    learned = load_settings().evidence.learned
    assert learned.page_margin == 0.3 and learned.curve == fitted.curve
