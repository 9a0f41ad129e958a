"""Hugging Face transformers (torch, CPU) side of `bench/compare_peers.py`: `python bench/peers/hf.py SPEC OUT`.

Runs in `bench/.venvs/hf`. Modes: "eager" (the default PyTorch execution) and "compile" (`torch.compile` of the
model, inductor backend) for the model benchmarks; tokenize: "fast" (BertTokenizerFast); serving: "eager"
(tokenizer + model forward under `torch.inference_mode`). Threads: `torch.set_num_threads(os.cpu_count())`,
except tokenization (one thread, parallelism off: set by the orchestrator's environment and `setup`).
On a GPU case (`--device gpu`) the model and its inputs live on "cuda". bfloat16 precision (a `:bf16` shape, on
the CPU or a GPU) is `torch.autocast(device, dtype=torch.bfloat16)` around the forward pass (float32 weights), as
Trainer's `bf16=True`; the matmul peak then multiplies bfloat16 matrices.
"""

import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import common  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import BertConfig, BertForPreTraining, BertForSequenceClassification, BertModel, BertTokenizerFast  # noqa: E402


def config(preset: str, **extra) -> BertConfig:
    s = common.shape(preset)
    return BertConfig(
        vocab_size=common.VOCAB_SIZE,
        hidden_size=s["hidden"],
        num_hidden_layers=s["layers"],
        num_attention_heads=s["heads"],
        intermediate_size=s["intermediate"],
        max_position_embeddings=common.MAX_POSITIONS,
        type_vocab_size=common.TYPE_VOCAB_SIZE,
        **extra,
    )


def prepared(model, mode):
    """The model as the mode runs it: itself (eager) or `torch.compile(model)`."""
    return torch.compile(model) if mode == "compile" else model


def device(spec) -> str:
    return "cuda" if common.on_gpu(spec) else "cpu"


def tensors(batch: dict, spec=None) -> dict:
    return {name: torch.from_numpy(value).long().to(device(spec or {})) for name, value in batch.items()}


def autocast(spec):
    """The spec's precision for the forward pass: bf16 autocast, or nothing (float32)."""
    return torch.autocast(device(spec), dtype=torch.bfloat16, enabled=spec.get("precision") == "bfloat16")


def sync(spec):
    """`common.time_spec`'s wait for the GPU (None on CPUs)."""
    return torch.cuda.synchronize if common.on_gpu(spec) else None


def forward(spec, mode):
    model = BertModel(config(spec["preset"])).eval().to(device(spec))
    run_model = prepared(model, mode)
    b = tensors(common.synthetic_batch(spec["batch"], spec["seq"]), spec)

    def run():
        with torch.no_grad(), autocast(spec):
            return run_model(
                input_ids=b["word_ids"], attention_mask=b["mask"], token_type_ids=b["type_ids"]
            ).last_hidden_state

    times = common.time_spec(run, spec, sync(spec))
    return {**common.median_rate(spec["batch"], times), "attn_implementation": model.config._attn_implementation}


def train_step(model, optimizer, spec=None, **inputs):
    """loss.backward, clip to global norm 1.0 (Trainer's default max_grad_norm), AdamW step; the forward pass
    in the precision of `spec` (`autocast`; None: float32)."""
    with autocast(spec or {}):
        loss = model(**inputs).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.item()


def pretrain(spec, mode):
    """BertForPreTraining with MLM labels (-100 except the masked positions) and NSP labels, torch AdamW."""
    model = BertForPreTraining(config(spec["preset"])).train().to(device(spec))
    run_model = prepared(model, mode)
    # On a GPU the fused AdamW kernel, as the H200 anchor ran (torch's default there is foreach).
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=1e-4, weight_decay=0.01, **({"fused": True} if common.on_gpu(spec) else {})
    )
    b = common.synthetic_batch(spec["batch"], spec["seq"], spec["predictions"])
    labels = torch.full((spec["batch"], spec["seq"]), -100, dtype=torch.long)
    labels.scatter_(1, torch.from_numpy(b["positions"]).long(), torch.from_numpy(b["ids"]).long())
    t = tensors(b, spec)
    inputs = {
        "input_ids": t["word_ids"],
        "attention_mask": t["mask"],
        "token_type_ids": t["type_ids"],
        "labels": labels.to(device(spec)),
        "next_sentence_label": t["nsp"],
    }
    times = common.time_spec(lambda: train_step(run_model, optimizer, spec, **inputs), spec, sync(spec))
    return {**common.median_rate(spec["batch"], times), "attn_implementation": model.config._attn_implementation}


def tokenizer(data) -> BertTokenizerFast:
    """bert-base-uncased's WordPiece from its vocab.txt (transformers 5: `vocab=`, not `vocab_file=`)."""
    tok = BertTokenizerFast(vocab=data["vocab"], do_lower_case=True)
    probe = tok("Hello, world!", add_special_tokens=False)["input_ids"]
    if probe != [7592, 1010, 2088, 999]:
        raise RuntimeError(f"BertTokenizerFast did not load {data['vocab']}: 'Hello, world!' -> {probe}")
    return tok


def finetune(spec, mode):
    """The standard loop: per batch, tokenize with padding to the batch's longest (max 128), forward, step."""
    data = common.load_json(spec["data"])
    count = spec["batch"] * spec["finetune_batches"]
    texts, labels = data["sample"][:count], torch.tensor(data["labels"][:count])
    tok = tokenizer(data)
    model = BertForSequenceClassification(config(spec["preset"], num_labels=2)).train()
    run_model = prepared(model, mode)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5, weight_decay=0.01)
    batch, lengths = spec["batch"], []

    def epoch():
        for i in range(0, count, batch):
            inputs = tok(texts[i : i + batch], padding="longest", truncation=True, max_length=128, return_tensors="pt")
            lengths.append(inputs["input_ids"].shape[1])
            train_step(run_model, optimizer, **inputs, labels=labels[i : i + batch])

    warmup = common.time_calls(epoch, spec["warmup_epochs"], 0)
    times = common.time_calls(epoch, spec["runs"], 0)
    return {
        **common.median_rate(count, times),
        "warmup_s": sum(warmup),
        "mean_padded_length": sum(lengths) / len(lengths),
    }


def tokenize(spec, mode):
    """Batch encode, 1024 lines a call, ids only (no special tokens, no padding), one thread."""
    data = common.load_json(spec["data"])
    tok, lines = tokenizer(data), data["sentences"]
    batches = [lines[i : i + 1024] for i in range(0, len(lines), 1024)]
    tokens = sum(len(ids) for b in batches for ids in tok(b, add_special_tokens=False)["input_ids"])
    times = common.time_calls(
        lambda: [tok(b, add_special_tokens=False)["input_ids"] for b in batches], spec["runs"], spec["warmup"]
    )
    return {
        **common.median_rate(len(lines), times),
        "tokens": tokens,
        "megabytes": sum(len(line.encode()) for line in lines) / 1e6,
    }


def serving(spec, mode):
    """Text in → logits: tokenizer (pad to longest, max 128) + classifier forward under inference_mode.

    Each calling thread gets its own tokenizer (a shared one raises "Already borrowed" under concurrency).
    """
    data = common.load_json(spec["data"])
    model = BertForSequenceClassification(config(spec["preset"], num_labels=2)).eval()

    def make_call():
        tok = tokenizer(data)

        def call(texts):
            inputs = tok(texts, padding="longest", truncation=True, max_length=128, return_tensors="pt")
            with torch.inference_mode():
                return model(**inputs).logits.numpy()

        return call

    return common.serving_latency(make_call, data["sample"], spec)


def peak(spec, mode):
    """torch.matmul of two n x n matrices (`common.peak_size`, in the spec's precision), FLOP/s at the median."""
    n = common.peak_size(spec)
    dtype = torch.bfloat16 if spec.get("precision") == "bfloat16" else torch.float32
    a, b = (torch.randn(n, n, dtype=dtype, device=device(spec)) for _ in range(2))
    times = common.time_spec(lambda: torch.matmul(a, b), spec, sync(spec))
    return common.median_rate(2 * n**3, times)


def setup(spec):
    """All cores for torch (one for tokenization); reported back. A GPU case fails if torch sees no GPU."""
    threads = 1 if spec["bench"] == "tokenize" else os.cpu_count()
    torch.set_num_threads(threads)
    if common.on_gpu(spec):
        if not torch.cuda.is_available():
            raise RuntimeError("--device gpu, but torch sees no CUDA device")
        return {"torch_threads": threads, "gpu": torch.cuda.get_device_name()}
    return {"torch_threads": threads}


def versions():
    import tokenizers

    return {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
    }


if __name__ == "__main__":
    common.run(
        {
            "forward": forward,
            "pretrain": pretrain,
            "finetune": finetune,
            "tokenize": tokenize,
            "serving": serving,
            "peak": peak,
        },
        versions,
        setup,
    )
