"""Hugging Face transformers fine-tuning of a BERT directory on a CSV (text,label) split: the reference side of
bench/finetune_vs_hf.py. Runs in the transformers venv (torch), prints one JSON line.

    bench/.venvs/hf/bin/python bench/hf_finetune.py --init DIR --train_file train.csv --dev_file dev.csv --seed 1

Same recipe as tasks/run_glue.py: BertForSequenceClassification (pooled [CLS] -> dropout 0.1 -> dense),
google-research/bert's AdamW (no bias correction, eps 1e-6, decoupled weight decay 0.01 except biases and
LayerNorm; `BertAdamW` below, with torch's fused multi-tensor ops like torch.optim.AdamW), google-research/bert's
learning-rate schedule (linear warmup over 10%, linear decay to 0 over all steps), gradient
clipping at global norm 1.0, shuffled batches padded to the batch's longest rounded up to a multiple of 8, the
texts tokenised once up front, dev accuracy after every epoch.
"""

import argparse
import csv
import json
import time

import torch
from transformers import BertForSequenceClassification, BertTokenizerFast, DataCollatorWithPadding


class BertAdamW(torch.optim.Optimizer):
    """google-research/bert's AdamWeightDecayOptimizer (as keras_bert_lite's BertAdamW): m, v without bias
    correction, w -= lr * (m / (sqrt(v) + eps) + weight_decay * w). torch.optim.AdamW bias-corrects, which makes
    the first few hundred updates several times smaller (sqrt(1 - 0.999^t) is 0.3 at t = 100)."""

    def __init__(self, params, lr, weight_decay=0.0, betas=(0.9, 0.999), eps=1e-6):
        super().__init__(params, {"lr": lr, "weight_decay": weight_decay, "betas": betas, "eps": eps})

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            for p in params:
                if not self.state[p]:
                    self.state[p]["m"], self.state[p]["v"] = torch.zeros_like(p), torch.zeros_like(p)
            grads = [p.grad for p in params]
            m, v = [self.state[p]["m"] for p in params], [self.state[p]["v"] for p in params]
            beta_1, beta_2 = group["betas"]
            torch._foreach_mul_(m, beta_1)
            torch._foreach_add_(m, grads, alpha=1 - beta_1)
            torch._foreach_mul_(v, beta_2)
            torch._foreach_addcmul_(v, grads, grads, value=1 - beta_2)
            update = torch._foreach_div(m, torch._foreach_add(torch._foreach_sqrt(v), group["eps"]))
            if group["weight_decay"]:
                torch._foreach_add_(update, params, alpha=group["weight_decay"])
            torch._foreach_add_(params, update, alpha=-group["lr"])


def read_csv(path):
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    return [r["text"] for r in rows], [r["label"] for r in rows]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--init", required=True)
    p.add_argument("--train_file", required=True)
    p.add_argument("--dev_file", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--learning_rate", type=float, default=2e-5)
    p.add_argument("--warmup_proportion", type=float, default=0.1)
    p.add_argument("--weight_decay", type=float, default=0.01)
    p.add_argument("--seq_length", type=int, default=128)
    args = p.parse_args()

    torch.manual_seed(args.seed)
    tokenizer = BertTokenizerFast.from_pretrained(args.init)
    train_texts, train_labels = read_csv(args.train_file)
    dev_texts, dev_labels = read_csv(args.dev_file)
    names = sorted(set(train_labels))
    label_id = {n: i for i, n in enumerate(names)}

    def features(texts, labels):
        encoded = tokenizer(texts, truncation=True, max_length=args.seq_length)
        return [
            {"input_ids": ids, "attention_mask": mask, "labels": label_id[label]}
            for ids, mask, label in zip(encoded["input_ids"], encoded["attention_mask"], labels)
        ]

    train, dev = features(train_texts, train_labels), features(dev_texts, dev_labels)
    collate = DataCollatorWithPadding(tokenizer, pad_to_multiple_of=8)
    generator = torch.Generator().manual_seed(args.seed)
    train_loader = torch.utils.data.DataLoader(
        train, batch_size=args.batch_size, shuffle=True, collate_fn=collate, generator=generator
    )
    dev_loader = torch.utils.data.DataLoader(dev, batch_size=64, collate_fn=collate)

    model = BertForSequenceClassification.from_pretrained(args.init, num_labels=len(names))
    decay = [p for n, p in model.named_parameters() if not (n.endswith("bias") or "LayerNorm" in n)]
    no_decay = [p for n, p in model.named_parameters() if n.endswith("bias") or "LayerNorm" in n]
    optimizer = BertAdamW(
        [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=args.learning_rate,
        eps=1e-6,
    )
    total = len(train_loader) * args.epochs
    warmup = int(total * args.warmup_proportion)
    # google-research/bert's schedule, as ours (WarmupLinearDecay): linear warmup, and a linear decay that runs
    # over [0, total] from step 0 (not from the end of warmup as transformers' get_linear_schedule_with_warmup).
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: step / warmup if step < warmup else max(0.0, 1.0 - step / total)
    )

    epochs = []
    for _ in range(args.epochs):
        model.train()
        start = time.perf_counter()
        for batch in train_loader:
            loss = model(**batch).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
        seconds = time.perf_counter() - start
        model.eval()
        correct = 0
        with torch.no_grad():
            for batch in dev_loader:
                labels = batch.pop("labels")
                correct += int((model(**batch).logits.argmax(-1) == labels).sum())
        epochs.append({"accuracy": correct / len(dev), "train_seconds": seconds})
    print("RESULT " + json.dumps({"epochs": epochs, "torch_threads": torch.get_num_threads()}), flush=True)


if __name__ == "__main__":
    main()
