"""Typed settings: `config/assistant.yaml` (or `--config FILE`) plus `SUPPORTCREW_*` env overrides.

Usage::

    from config.settings import load_settings
    settings = load_settings()                    # the shipped defaults
    settings = load_settings("my.yaml")          # a user's file, merged over nothing else
    settings.retrieval.top_k                      # -> 5

Environment variables win over the file: ``SUPPORTCREW_RETRIEVAL__TOP_K=8``.
Any wrong key or value raises :class:`ConfigError` with one line per problem, naming the key.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from config.sources import SourceSettings

DEFAULT_CONFIG_PATH = Path(__file__).with_name("assistant.yaml")
# the fitted decision models ship beside the models they read (training/ writes them there)
FITTED_DECISION = Path(__file__).resolve().parent.parent / "storage" / "kb" / "assets" / "decision"
FITTED_ANSWERABILITY = FITTED_DECISION / "gate.yaml"
FITTED_PAGE_CHOICE = FITTED_DECISION / "page_choice.yaml"
FITTED_QUOTE = FITTED_DECISION / "quote.yaml"

Pipeline = Literal["bm25", "dense", "hybrid", "dense+late", "hybrid+late"]
PIPELINES: tuple[str, ...] = ("bm25", "dense", "hybrid", "dense+late", "hybrid+late")


class ConfigError(ValueError):
    """A configuration file or override is wrong; the message names the key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EmbeddingSettings(_Strict):
    model: str = "sentence-transformers/all-MiniLM-L6-v2"
    model_dir: Path | None = None
    max_tokens: int = Field(256, ge=8, le=512)
    batch_size: int = Field(8, ge=1, le=1024)
    threads: int | None = Field(None, ge=1)


class Bm25Settings(_Strict):
    model: str = "Qdrant/bm25"
    model_dir: Path | None = None
    language: str = "english"


class QdrantSettings(_Strict):
    path: Path | None = None
    url: str | None = None
    api_key: str | None = None
    collection: str = Field("kb", pattern=r"^[A-Za-z0-9_\-]{1,64}$")
    token_datatype: Literal["float32", "float16"] = "float16"


class VectorStoreSettings(BaseModel):
    """`type` is `qdrant` or the module path of a user's retriever class; other keys pass through."""

    model_config = ConfigDict(extra="allow", frozen=True)
    type: str = "qdrant"


class ChunkingSettings(_Strict):
    max_tokens: int = Field(400, ge=16, le=4096)
    overlap_sentences: int = Field(1, ge=0, le=10)


class FusionWeights(_Strict):
    dense: float = Field(1.0, ge=0)
    bm25: float = Field(1.0, ge=0)
    tokens: float = Field(1.0, ge=0)


class RetrievalSettings(_Strict):
    pipeline: Pipeline = "hybrid+late"
    top_k: int = Field(5, ge=1, le=1000)
    threshold: float = 0.0
    rrf_k: int = Field(5, ge=1)
    weights: FusionWeights = FusionWeights()
    candidates: int = Field(100, ge=1, le=10000)
    rescore_depth: int = Field(30, ge=1, le=10000)
    window: int = Field(1, ge=0, le=10)
    entity_context: bool = True
    context_budget: int = Field(1500, ge=50, le=100000)


class SlotRule(_Strict):
    """How one slot becomes a payload filter.

    * ``contains_or_absent`` - the document's list field is absent or contains the value.
    * ``equals_or_absent``  - the document's field is absent or equals the value.
    * ``at_most``           - the document's level is at or below the slot's level in ``levels``.

    ``values``: the values the slot may take, where the match is not ``at_most`` (whose
    ``levels`` are its values): a value outside them is refused (``tier=enterprize`` would
    otherwise be a filter that silently hides every tiered page); None accepts any.
    """

    field: str
    mode: Literal["enforced", "advisory"]
    match: Literal["contains_or_absent", "equals_or_absent", "at_most"]
    levels: list[str] | None = None
    values: list[str] | None = None
    default: str | None = None

    @model_validator(mode="after")
    def _levels_for_at_most(self) -> SlotRule:
        if self.match == "at_most" and not self.levels:
            raise ValueError("match 'at_most' needs a non-empty 'levels' list")
        if self.levels and self.default is not None and self.default not in self.levels:
            raise ValueError(f"default {self.default!r} is not one of levels {self.levels}")
        if self.values is not None and (self.match == "at_most" or not self.values):
            raise ValueError("'values' lists a non-empty set for a match other than 'at_most'")
        if self.values and self.default is not None and self.default not in self.values:
            raise ValueError(f"default {self.default!r} is not one of values {self.values}")
        return self


def default_slot_rules() -> dict[str, SlotRule]:
    return {
        "tier": SlotRule(field="tiers", mode="enforced", match="contains_or_absent"),
        "access_level": SlotRule(
            field="access",
            mode="enforced",
            match="at_most",
            levels=["public", "customer", "internal"],
            default="public",
        ),
        "customer_id": SlotRule(field="customer_id", mode="enforced", match="equals_or_absent"),
        "tenant": SlotRule(field="tenant", mode="enforced", match="equals_or_absent"),
        "product": SlotRule(field="product", mode="advisory", match="equals_or_absent"),
        "language": SlotRule(field="language", mode="advisory", match="equals_or_absent"),
    }


LEARNED_FEATURE = "learned"  # the learned cross-encoder's probability, as a logistic feature


class LinearModel(_Strict):
    """Standardised features and their weights: ``weight * (feature - mean) / scale`` each
    (``tasks/operating_points.linear_terms``); the answerability gate and the page choice."""

    features: list[str] = Field(default_factory=list)
    mean: list[float] = Field(default_factory=list)
    scale: list[float] = Field(default_factory=list)
    weights: list[float] = Field(default_factory=list)
    fitted_on: str = ""
    rules: str = ""  # the version of storage/kb/assets/decision/rules.yaml it was fitted with

    @model_validator(mode="after")
    def _same_lengths(self) -> LinearModel:
        sizes = {len(self.features), len(self.mean), len(self.scale), len(self.weights)}
        if len(sizes) != 1:
            raise ValueError("features, mean, scale and weights must have the same length")
        if any(s <= 0 for s in self.scale):
            raise ValueError("every scale must be positive")
        return self


class AnswerabilityModel(LinearModel):
    """A logistic model over the answerability features (tasks/answerability.py).

    ``probability = sigmoid(bias + sum(weight * (feature - mean) / scale))``
    (``tasks/operating_points.py``). At or above
    ``answer_at`` the passages answer; below ``refuse_below`` they do not; in between the
    evidence is undecided (a judge model may weigh in; it never decides alone). Fitted by
    ``training/fit_decision.py`` into storage/kb/assets/decision/gate.yaml.
    """

    features: list[str] = Field(min_length=1)
    mean: list[float]
    scale: list[float]
    weights: list[float]
    bias: float
    answer_at: float = Field(0.5, ge=0, le=1)
    refuse_below: float = Field(0.5, ge=0, le=1)

    @model_validator(mode="after")
    def _points_in_order(self) -> AnswerabilityModel:
        if self.refuse_below > self.answer_at:
            raise ValueError("refuse_below must not exceed answer_at")
        return self


class OperatingPoint(_Strict):
    """One point of the gate's risk-coverage curve, measured on data we may tune on."""

    threshold: float = Field(ge=0, le=1)
    precision: float = Field(ge=0, le=1)
    coverage: float = Field(ge=0, le=1)


def fitted_answerability() -> AnswerabilityModel:
    """The shipped logistic model (storage/kb/assets/decision/gate.yaml)."""
    return AnswerabilityModel.model_validate(yaml.safe_load(FITTED_ANSWERABILITY.read_text()))


class PageChoiceModel(LinearModel):
    """Which candidate page answers (tasks/page_choice.py): a logistic score over each
    candidate's features, ``sum(weight * (feature - mean) / scale)``; the highest scoring
    candidate answers. Fitted by ``training/fit_decision.py`` into
    storage/kb/assets/decision/page_choice.yaml; with no ``weights`` the best window reading
    (with half the passage's relevance) chooses.
    """


def fitted_page_choice() -> PageChoiceModel:
    """The shipped page chooser (storage/kb/assets/decision/page_choice.yaml; none fitted:
    the reading chooses)."""
    if not FITTED_PAGE_CHOICE.exists():
        return PageChoiceModel()
    return PageChoiceModel.model_validate(yaml.safe_load(FITTED_PAGE_CHOICE.read_text()))


class QuoteModel(LinearModel):
    """Which units of the answering passage an extractive answer quotes
    (tasks/quote_model.py): ``sigmoid(bias + sum(weight * (feature - mean) / scale))`` per
    unit, fitted on the evidence spans agents grounded their replies on by
    ``training/quote_fit.py`` into quote.yaml in storage/kb/assets/decision/; with no ``weights``
    the window reading's focus picks."""

    bias: float = 0.0


def fitted_quote() -> QuoteModel:
    """The shipped quote model (quote.yaml in storage/kb/assets/decision/; none fitted: the
    window reading picks)."""
    if not FITTED_QUOTE.exists():
        return QuoteModel()
    return QuoteModel.model_validate(yaml.safe_load(FITTED_QUOTE.read_text()))


class EvidenceSettings(_Strict):
    """The evidence checks: the answerability gate and the support check of answer sentences.

    ``page_choice`` picks the page among the candidates; ``answerability`` (a logistic model over
    the chosen page's evidence features, the cross-encoder's reading of it and the codes it
    explains, its ``answer_at`` fitted for ``target_precision``) decides whether it answers
    (``tasks/decision.py``); ``quote`` picks the sentences of that page an extractive answer
    quotes. ``target_precision``: the share of answers that must cite a page
    that answers. ``model_dir``: the answerability cross-encoder (None: the shipped one).
    ``support_*``: an answer sentence needs this late-interaction score (MaxSim mean over its
    word pieces) and this share of its content words in the passage it leans on; one that
    keeps ``support_lexical_close`` of its words needs only ``support_semantic_close``.
    """

    target_precision: float = Field(0.70, gt=0, le=1)
    answerability: AnswerabilityModel = Field(default_factory=fitted_answerability)
    page_choice: PageChoiceModel = Field(default_factory=fitted_page_choice)
    quote: QuoteModel = Field(default_factory=fitted_quote)
    model_dir: Path | None = None
    support_semantic: float = Field(0.8, ge=0, le=1)
    support_lexical: float = Field(0.6, ge=0, le=1)
    support_semantic_close: float = Field(0.73, ge=0, le=1)
    support_lexical_close: float = Field(0.75, ge=0, le=1)
    answer_words: int = Field(60, ge=10, le=400)

    @property
    def reads_learned(self) -> bool:
        """Whether a turn runs the learned cross-encoder: a feature of the gate or of the
        page choice."""
        return LEARNED_FEATURE in (
            *self.answerability.features,
            *self.page_choice.features,
            *self.quote.features,
        )


class LlmSettings(_Strict):
    """The chat model. ``structured_output``: how typed role outputs are asked of a server:
    ``json_schema`` (OpenAI's response_format), ``json_object`` (with the schema beside it, as
    llama.cpp's server takes it), ``none`` (the prompt's JSON instructions alone), or ``auto``:
    a one-time probe at start picks the first one the server accepts. ``stream``: a server's
    replies arrive as a stream, so a call cut at the turn's deadline closes it and the server
    stops generating (llama.cpp's server finishes an unstreamed request whose client is gone,
    and the next request waits behind it)."""

    provider: str = "local"
    model_path: Path | None = None
    max_tokens: int = Field(256, ge=16, le=4096)
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = Field(0.0, ge=0, le=2)
    seed: int = 7
    structured_output: Literal["auto", "json_schema", "json_object", "none"] = "auto"
    stream: bool = True


RoleChoice = Literal["model", "evidence", "auto"]
ROLE_NAMES = ("reformulate", "retrieve", "judge", "respond")


class RoleSettings(_Strict):
    """Which path each role takes: the model's, or the evidence path that needs no model.

    ``evidence`` paths: reformulate = the deterministic follow-up rewrite; retrieve = the turn
    searches the customer's words and the rewrite itself; judge = the answerability gate's
    probability alone; respond = the extractive answer. ``auto`` takes the evidence path with
    the local model (bench/roles.py: it is as correct for a fraction of the time) and the
    model path with any other provider.
    """

    reformulate: RoleChoice = "auto"
    retrieve: RoleChoice = "auto"
    judge: RoleChoice = "auto"
    respond: RoleChoice = "auto"

    def uses_model(self, role: str, provider: str) -> bool:
        """Whether ``role`` calls the model with this LLM provider."""
        choice = getattr(self, role)
        return choice == "model" or (choice == "auto" and provider != "local")


LimitName = Literal["sessions", "handoffs", "message_bytes", "turns", "searches", "feedback"]


class ApiKey(_Strict):
    """One pilot API key: stored as its SHA-256, never in clear.

    ``slots`` are the enforced slots of every caller using the key (a public website widget:
    ``{access_level: public}``); ``trust_customer_id`` lets a trusted backend name customers.
    ``role``: ``customer`` keys hold conversations; ``agent`` keys (support staff) work the
    hand-off queue of their tenant; ``admin`` keys also read the knowledge-gap report;
    ``widget`` keys are *publishable*: pasted into a team's pages, they can only open a
    session (``POST /v1/widget/sessions``), which hands back a short-lived token for that one
    session's messages.

    ``origins`` are the browser origins (``https://help.example.com``) that may use the key: a
    request carrying another ``Origin`` than these or the service's own is refused (403), so a
    secret key pasted into a web page fails at once. A widget key needs at least one.
    ``identity_secret_env`` names the environment variable holding the secret the team's site
    signs customer tokens with (HS256): only a signed token names a widget visitor.
    ``limits`` replace ``pilot.limits``' rates for this key (a widget key's serve its whole
    site: e.g. ``{message_bytes: 50000000/day}``); its visitors each have
    ``pilot.visitor_limits``.
    """

    name: str = Field(min_length=1, max_length=80)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    tenant: str = Field("", max_length=200)
    slots: dict[str, str] = Field(default_factory=dict)
    trust_customer_id: bool = False
    role: Literal["customer", "agent", "admin", "widget"] = "customer"
    origins: list[str] = Field(default_factory=list, max_length=50)
    identity_secret_env: str | None = Field(None, pattern=r"^[A-Z_][A-Z0-9_]{0,127}$")
    # what a customer reads when this staff key's person joins their conversation ("Ana");
    # without it they read "a person from our support team" (a key's name is never shown)
    display_name: str | None = Field(None, min_length=1, max_length=80, pattern=r"^[^\x00-\x1f<>]+$")
    # this key's own limits instead of pilot.limits' (a widget's: sized for its whole site)
    limits: dict[LimitName, str] = Field(default_factory=dict)

    @field_validator("limits")
    @classmethod
    def _rates(cls, limits: dict[str, str]) -> dict[str, str]:
        return {name: a_rate(rate) for name, rate in limits.items()}

    @field_validator("origins")
    @classmethod
    def _plain_origins(cls, origins: list[str]) -> list[str]:
        """Each one a scheme, a host and an optional port, exactly as browsers send it."""
        for origin in origins:
            if not ORIGIN.fullmatch(origin):
                raise ValueError(
                    f"origin {origin!r} is not scheme://host[:port] (no path, no wildcard, "
                    "no trailing slash), e.g. https://help.example.com"
                )
        return origins

    @model_validator(mode="after")
    def _widget_has_its_origins(self) -> ApiKey:
        if self.role == "widget":
            if not self.origins:
                raise ValueError(
                    f"widget key {self.name!r} lists no origins: name the sites that embed it"
                )
            if self.trust_customer_id:
                raise ValueError(
                    f"widget key {self.name!r}: a key in a web page cannot be trusted to name "
                    "customers (use identity_secret_env and signed customer tokens)"
                )
        elif self.identity_secret_env:
            raise ValueError(f"key {self.name!r}: identity_secret_env is for widget keys only")
        return self


RATE = re.compile(r"[1-9][0-9]*\s*/\s*(second|minute|hour|day)")
ORIGIN = re.compile(r"https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?")


class PilotLimits(_Strict):
    """Per API key, shared by every worker (counted in Qdrant); over a limit: 429 with
    Retry-After. Rates in the `limits` notation: "<count>/<second|minute|hour|day>". A web
    widget's key is shared by all its visitors: size its own limits (``limits`` of the key)
    for all of them together; each visitor is held to ``pilot.visitor_limits``."""

    sessions: str = "600/minute"
    handoffs: str = "60/hour"
    message_bytes: str = "5000000/day"  # UTF-8 bytes of customer messages
    turns: str = "300/minute"  # messages the assistant answers (each one a turn)
    searches: str = "1200/minute"  # POST /v1/search
    feedback: str = "600/minute"  # ratings and comments
    waiting_messages: int = Field(20, ge=1, le=10_000)  # per session, until a person replies

    @field_validator("sessions", "handoffs", "message_bytes", "turns", "searches", "feedback")
    @classmethod
    def _a_rate(cls, value: str) -> str:
        return a_rate(value)


def a_rate(value: str) -> str:
    """A rate in the `limits` notation, or ValueError saying what one looks like."""
    if not RATE.fullmatch(value.strip()):
        raise ValueError(f"{value!r} is not a rate like '30/minute' (count/second, minute, hour or day)")
    return value.strip()


class VisitorLimits(_Strict):
    """Per visitor of a publishable (``widget``) key, beside the key's own limits: each widget
    session token and each client address is one visitor, counted apart (shared by every
    worker). One visitor spends its own budget, never the site's. The client address is the
    connection's, or, from a proxy in ``pilot.trusted_proxies``, the one it forwards."""

    sessions: str = "20/hour"  # sessions opened from one address
    handoffs: str = "3/hour"
    message_bytes: str = "100000/day"
    turns: str = "20/minute"
    searches: str = "30/minute"
    feedback: str = "20/hour"
    reads: str = "120/minute"  # GET of the session (polled after a hand-off), /me, token renewal

    @field_validator("*")
    @classmethod
    def _a_rate(cls, value: str) -> str:
        return a_rate(value)


class WidgetBudget(_Strict):
    """How a widget key's own limits are spent (``service/stores/key_budget.py``): each is a budget
    that refills continuously (a day's limit at a day's pace), of which ``reserve_share`` is
    kept for new visitors: drawn once the rest is spent, by an address that has drawn less
    than ``newcomer_share`` of its own visitor limit from the key that day. The lead's page and
    ``/metrics`` show a budget with less than ``low_below`` of it left as running low."""

    reserve_share: float = Field(0.2, ge=0.0, lt=1.0)
    newcomer_share: float = Field(0.25, gt=0.0, le=1.0)
    low_below: float = Field(0.2, ge=0.0, le=1.0)


class PilotSettings(_Strict):
    api_keys: list[ApiKey] = Field(default_factory=list)

    limits: PilotLimits = Field(default_factory=PilotLimits)
    visitor_limits: VisitorLimits = Field(default_factory=VisitorLimits)
    widget_budget: WidgetBudget = Field(default_factory=WidgetBudget)
    # proxies whose X-Forwarded-For names the client (nginx on the same machine): addresses
    # or networks (uvicorn's forwarded_allow_ips); from any other peer the header is ignored
    trusted_proxies: list[str] = Field(default_factory=lambda: ["127.0.0.1", "::1"])
    # where customers reach this service (https://support.example.com): the links of
    # published desk articles start with it; unset, a link is the path alone, which the web
    # chat and the widget open on the service. Never taken from a request's Host header.
    public_url: str | None = Field(None, pattern=r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/\S*)?$")
    max_request_bytes: int = Field(100_000, ge=1000, le=10_000_000)
    max_response_bytes: int = Field(100_000, ge=1000, le=10_000_000)
    body_timeout_s: float = Field(10.0, gt=0, le=300)  # a body that stops arriving: 408
    header_timeout_s: float = Field(10.0, gt=0, le=300)  # headers not complete in time: 408
    # a session without a message for this long is closed: its long-term memory is written
    idle_close_minutes: float = Field(30.0, gt=0, le=7 * 24 * 60)
    # ONNX threads per encoding while serving, unless embeddings.threads says otherwise:
    # concurrent turns already keep the cores busy, and threads of one small encoding that
    # spin beside them cost more CPU than they save (bench/service.py)
    encoder_threads: int = Field(1, ge=1, le=64)
    # re-run ``sources:`` this often while serving (``main.py sync``); 0: never
    sync_every_minutes: float = Field(0.0, ge=0, le=7 * 24 * 60)
    # a conversation quiet this long gets its outcome (tasks/outcomes.py); the report labels
    # every conversation past it, so a short window shows outcomes at once
    outcome_after_s: float = Field(86_400.0, ge=0, le=90 * 86_400)
    # a resolved conversation whose customer comes back on its topic this soon is reopened
    reopen_within_s: float = Field(7 * 86_400.0, ge=0, le=365 * 86_400)
    # a widget session's token (its only credential) lasts this long; the widget then opens
    # a new session. Signed with SUPPORTCREW_SESSION_SECRET (the environment, never config).
    session_token_minutes: float = Field(60.0, gt=0, le=24 * 60)
    # a signed customer token from the team's site must expire within this many seconds
    customer_token_max_age_s: float = Field(600.0, gt=0, le=86_400)

    @field_validator("api_keys")
    @classmethod
    def _names_unique_per_tenant(cls, keys: list[ApiKey]) -> list[ApiKey]:
        """A key's name is who acts (queue holders, rate counters): one per name and tenant."""
        seen: set[tuple[str, str]] = set()
        for key in keys:
            if (key.tenant, key.name) in seen:
                raise ValueError(
                    f"two API keys are named {key.name!r} in tenant {key.tenant!r}: "
                    "give each key of a tenant its own name"
                )
            seen.add((key.tenant, key.name))
        return keys


class Observability(_Strict):
    """What the pilot tells the team's monitoring (docs/operations.md).

    ``metrics``: ``GET /metrics`` in Prometheus text format behind an admin key, or, with
    ``metrics_port``, on a port of its own without one (bind it where only the scraper reaches).
    ``otlp_endpoint``: OpenTelemetry spans of each turn and step go there (OTLP over HTTP);
    none are made without it. ``json_logs``: one JSON object a line, with the session id; a
    customer's message text only with ``log_message_text``.
    """

    metrics: bool = True
    metrics_port: int | None = Field(None, ge=1, le=65535)
    metrics_host: str = Field("127.0.0.1", min_length=1, max_length=255)
    otlp_endpoint: str | None = Field(None, pattern=r"^https?://\S+$")
    service_name: str = Field("supportcrew", min_length=1, max_length=100)
    json_logs: bool = False
    log_message_text: bool = False


class Messages(_Strict):
    no_results: str = (
        "I could not find this in our help articles. Could you rephrase, or shall I connect you "
        "with a support agent?"
    )
    # no_results offers a person: the next "yes" / "ok" / "please do" hands off and "no" gets
    # ``declined`` (tasks/message_kind.py); false when your no_results offers none
    no_results_offers_handoff: bool = True
    declined: str = "All right. If there is anything else I can help with, just ask."
    # evidence between refuse_below and answer_at, no judge model: the closest article offered
    suggest: str = (
        "I could not find a direct answer to that in our help articles. This article may help:"
    )
    connection_problem: str = "I'm having trouble reaching our knowledge base right now."
    # a turn that failed on our side (a bug, not an outage): logged, stored as ``error``
    error: str = (
        "Something went wrong on our side with this message. Please try again, or ask for a person."
    )
    handoff: str = "I'm passing this conversation to a member of our support team."
    # the first message after a hand-off, until a person replies; later ones get no reply
    handoff_waiting: str = "Thanks, a person from our team will reply here."
    # the assistant would hand off, but the key's ``pilot.limits.handoffs`` are spent
    handoff_busy: str = (
        "Our support team cannot take more conversations right now. Please try again later."
    )
    # a message of courtesy alone ("Thanks!", "Hi!"): nothing searched
    courtesy: str = "Happy to help. If you have a question about our products or your account, just ask."
    # a goodbye ("bye", "Thanks, bye!"): nothing searched; the chat asks its closing question
    goodbye: str = "Goodbye, and thanks for contacting us. If anything else comes up, just write here."
    # the customer's answer to the closing question ("Did we solve your problem today?"):
    # thanks for a yes; for a no, the offer of a person (the chat shows its button with it)
    solved: str = "Thanks for telling us: glad we could help."
    not_solved: str = "Sorry we did not solve it. A person from our team can take it from here."
    # contact details alone ("you can reach me at jo@example.com"): nothing searched
    contact: str = "Thanks, we have your details. What can I help you with?"


class Settings(BaseSettings):
    """The whole configuration of one assistant."""

    model_config = SettingsConfigDict(
        env_prefix="SUPPORTCREW_",
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
    )

    embeddings: EmbeddingSettings = EmbeddingSettings()
    bm25: Bm25Settings = Bm25Settings()
    qdrant: QdrantSettings = QdrantSettings()
    vector_store: VectorStoreSettings = VectorStoreSettings()
    chunking: ChunkingSettings = ChunkingSettings()
    retrieval: RetrievalSettings = RetrievalSettings()
    slots: dict[str, SlotRule] = Field(default_factory=default_slot_rules)
    evidence: EvidenceSettings = EvidenceSettings()
    llm: LlmSettings = LlmSettings()
    engine: Literal["crewai", "autogen"] = "crewai"
    process: Literal["sequential", "hierarchical"] = "sequential"
    # who picks each coworker in ``process: hierarchical``: policy = the step table
    # (agents/topology.py, no model call), model = the model, auto = the policy with the local
    # model and the model with any other provider
    manager: Literal["policy", "model", "auto"] = "auto"
    max_rounds: int = Field(2, ge=0, le=5)
    turn_timeout_s: float = Field(15.0, gt=0, le=600)
    roles: RoleSettings = RoleSettings()
    messages: Messages = Messages()
    pilot: PilotSettings = PilotSettings()
    observability: Observability = Observability()
    sources: list[SourceSettings] = Field(default_factory=list)
    telemetry: bool = False

    def model_manages(self) -> bool:
        """Whether a hierarchical process's manager is the model rather than the step table.

        >>> Settings().model_manages(), Settings(manager="model").model_manages()
        (False, True)
        """
        return self.manager == "model" or (self.manager == "auto" and self.llm.provider != "local")

    def for_serving(self) -> Settings:
        """These settings as the pilot service runs them: encodings of ``pilot.encoder_threads``
        threads each, unless ``embeddings.threads`` is set.

        >>> Settings().for_serving().embeddings.threads
        1
        >>> Settings(embeddings={"threads": 2}).for_serving().embeddings.threads
        2
        """
        if self.embeddings.threads is not None:
            return self
        embeddings = self.embeddings.model_copy(update={"threads": self.pilot.encoder_threads})
        return self.model_copy(update={"embeddings": embeddings})

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (env_settings, init_settings)


def _format_validation_error(error: ValidationError, source: str) -> str:
    lines = []
    for item in error.errors():
        key = ".".join(str(part) for part in item["loc"]) or "(top level)"
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown key"
        got = item.get("input")
        detail = f" (got {got!r})" if item["type"] != "extra_forbidden" and _is_scalar(got) else ""
        lines.append(f"{source}: {key}: {message}{detail}")
    return "\n".join(lines)


def _is_scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) or value is None


def read_yaml_mapping(path: Path, what: str = "config file") -> dict[str, Any]:
    """Read a YAML file that must hold a mapping; raise ConfigError naming the file (and
    ``what`` it is, when it is missing) otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: {what} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read ({exc})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})".replace("\n", " ")) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of settings, got {type(data).__name__}")
    return data


def load_settings(path: str | Path | None = None, **overrides: Any) -> Settings:
    """Load settings from ``path`` (default: the shipped assistant.yaml), env, and overrides."""
    config_path = Path(path) if path is not None else DEFAULT_CONFIG_PATH
    data = read_yaml_mapping(config_path)
    data.update(overrides)
    try:
        return Settings(**data)
    except ValidationError as exc:
        raise ConfigError(_format_validation_error(exc, str(config_path))) from None
