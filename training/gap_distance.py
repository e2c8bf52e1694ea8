"""Choose the gap report's clustering distance on labelled paraphrase groups.

``examples/gaps/paraphrase-groups.jsonl`` holds questions about topics the example knowledge
base does not cover, each labelled with its group (the same missing topic in other words).
Each distance cut is scored by the adjusted Rand index of its clusters against the groups
(1.0: the groups exactly; 0: chance), with the stored MiniLM vectors the report uses.

    python -m training.gap_distance      # table; results in bench/results/gap_threshold.{md,json}
"""

from __future__ import annotations

import json

from sklearn.metrics import adjusted_rand_score

from config.settings import load_settings
from config.telemetry import apply_telemetry_policy
from evaluation.reporting import ROOT, table, write_results
from storage.kb.embeddings import load_encoders
from tasks.gap_report import DISTANCE, GapQuestion, _labels, question_vectors

GROUPS = ROOT / "examples" / "gaps" / "paraphrase-groups.jsonl"
CUTS = [round(0.20 + 0.05 * n, 2) for n in range(11)]


def main() -> None:
    apply_telemetry_policy()  # where the training process starts
    rows = [json.loads(line) for line in GROUPS.read_text(encoding="utf-8").splitlines() if line]
    encoders = load_encoders(load_settings())
    questions = [
        GapQuestion(text=r["text"], kind="refused", session_id="s", turn_index=n)
        for n, r in enumerate(rows)
    ]
    vectors = question_vectors(questions, encoders.dense.encode)
    truth = [r["group"] for r in rows]
    scored = []
    for cut in CUTS:
        labels = _labels(vectors, cut)
        scored.append(
            {
                "distance": cut,
                "ari": round(adjusted_rand_score(truth, labels), 3),
                "clusters": len(set(labels)),
                "groups": len(set(truth)),
            }
        )
    best = max(scored, key=lambda s: s["ari"])
    lines = [
        f"# Gap report clustering distance ({len(rows)} questions, {len(set(truth))} paraphrase groups)",
        "",
        *table(
            ["distance", "ARI", "clusters", "groups"],
            [[s["distance"], s["ari"], s["clusters"], s["groups"]] for s in scored],
        ),
        "",
        f"Best: distance {best['distance']} (ARI {best['ari']}); shipped: {DISTANCE}.",
    ]
    write_results("gap_threshold", lines, {"cuts": scored, "best": best, "shipped": DISTANCE})


if __name__ == "__main__":
    main()
