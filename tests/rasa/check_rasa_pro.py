"""Our retriever inside a real rasa-pro install (not a test double of Rasa).

Run by ``.ci/rasa`` in a virtualenv holding ``rasa-pro==3.21.0`` and supportcrew's core only
(no agent frameworks, no FastAPI, no llama.cpp), after ``python main.py ingest examples/kb``:

    python tests/rasa/check_rasa_pro.py DATA_DIR

Rasa's own loader (``create_from_endpoint_config``) builds the adapter from its import path,
``EnterpriseSearchPolicy`` connects it with an ``EndpointConfig`` as it does on every
prediction, and the search gets a real ``DialogueStateTracker``'s state: the enforced tier
slot must hide the Enterprise-only SSO articles from a Basic customer. Exit code 0 when all
holds; every failed check is printed.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from rasa.core.information_retrieval import (
    InformationRetrieval,
    InformationRetrievalException,
    SearchResultList,
    create_from_endpoint_config,
)
from rasa.core.policies.enterprise_search_policy import EnterpriseSearchPolicy
from rasa.shared.core.events import SlotSet, UserUttered
from rasa.shared.core.slots import AnySlot
from rasa.shared.core.trackers import DialogueStateTracker
from rasa.utils.endpoints import EndpointConfig

ADAPTER = "integrations.rasa_adapter.SupportcrewRasaRetriever"


def tracker_state(tier: str, question: str) -> dict:
    slots = [AnySlot(name, mappings=[]) for name in ("tier", "access_level")]
    tracker = DialogueStateTracker.from_events(
        "customer-1",
        [UserUttered(question), SlotSet("tier", tier), SlotSet("access_level", "customer")],
        slots=slots,
    )
    return tracker.current_state()


async def check(data_dir: Path) -> list[str]:
    failures = []
    store = create_from_endpoint_config(config_type=ADAPTER, embeddings=None)
    if not isinstance(store, InformationRetrieval):
        failures.append(f"{type(store)} is not Rasa's InformationRetrieval")
    policy = EnterpriseSearchPolicy.__new__(EnterpriseSearchPolicy)  # its connect step only
    policy.vector_store, policy.vector_store_type = store, ADAPTER
    endpoint = EndpointConfig(type=ADAPTER, data_dir=str(data_dir))
    policy._connect_vector_store_or_raise(type("Endpoints", (), {"vector_store": endpoint}))
    question = "How do I set up SAML single sign-on?"
    for tier, sso_visible in (("enterprise", True), ("basic", False)):
        found = await store.search(
            query=question, tracker_state=tracker_state(tier, question), threshold=0.0
        )
        if not isinstance(found, SearchResultList):
            failures.append(f"search returned {type(found)}, not Rasa's SearchResultList")
            continue
        sources = [r.metadata.get("source_id") for r in found.results]
        shows_sso = any(str(s).startswith("sso/") for s in sources)
        if shows_sso != sso_visible:
            failures.append(
                f"tier {tier}: SSO articles {'missing' if sso_visible else 'shown'} ({sources})"
            )
        if found.results and not found.results[0].metadata.get("answer"):
            failures.append("metadata['answer'] is empty (Rasa's non-generative mode needs it)")
    try:
        await store.search(query="   ", tracker_state=tracker_state("basic", "?"), threshold=0.0)
        failures.append("a blank query did not raise Rasa's InformationRetrievalException")
    except InformationRetrievalException:
        pass
    return failures


def main() -> int:
    failures = asyncio.run(check(Path(sys.argv[1])))
    for failure in failures:
        print("FAILED:", failure)
    print("rasa-pro check:", "ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
