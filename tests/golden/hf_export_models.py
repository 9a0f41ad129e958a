"""The tiny models whose Hugging Face exports the export goldens are made from (`make goldens`), and the tests
rebuild: deterministic weights (numpy, by seed; no Keras initializer), one model per exported architecture.

Run in .venv (it needs keras_bert_lite): `python tests/golden/hf_export_models.py OUT_DIR` writes
OUT_DIR/<name>/ with `keras_bert_lite.export_hf` for every name in MODELS; make_hf_export_goldens.py then loads
them with transformers (in the goldens venv).

Every weight is drawn large enough (kernels ~N(0, 0.2)) that the feed-forward pre-activations reach |x| ~ 1-3,
where the exact (erf) and tanh GELUs differ by ~1e-3: a config that names the wrong GELU changes the outputs far
beyond the tests' 1e-5. Models alternate the two GELUs. The token classifier and one embedder have a cased
vocabulary, the others an uncased one. The embedders' exports carry sentence-transformers' files: one mean-pools
and normalises, cutting texts at EMBEDDER_SEQ tokens (three of TEXTS are longer); the other joins three modes.
The multi-label classifier is exported with problem_type "multi_label_classification".
"""

from __future__ import annotations

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))  # the repository root, when run as a script

WORDS = [
    "the",
    "film",
    "was",
    "good",
    "great",
    "fine",
    "bad",
    "awful",
    "poor",
    "paris",
    "london",
    "anna",
    "lives",
    "in",
    "who",
    "where",
    "does",
    "?",
    ",",
    ".",
    "!",
    "un",
    "##able",
    "##s",
    "##ing",
    "ber",
    "##t",
]
SEQ, BATCH, CHOICES = 16, 4, 3
EMBEDDER_SEQ = 6
CLASS_LABELS = ("negative", "neutral", "positive")
TAG_LABELS = ("O", "B-PER", "I-PER", "B-LOC", "I-LOC")
TOPIC_LABELS = ("arts", "politics", "science", "sports")
# name -> (builder, hidden_act, seed, cased vocabulary)
MODELS = {
    "encoder": ("encoder", "gelu_approx", 1, False),
    "pretrainer": ("pretrainer", "gelu", 2, False),
    "classifier": ("classifier", "gelu_approx", 3, False),
    "regression": ("regression", "gelu", 4, False),
    "token_classifier": ("token_classifier", "gelu_approx", 5, True),
    "span_labeler": ("span_labeler", "gelu", 6, False),
    "multiple_choice": ("multiple_choice", "gelu_approx", 7, False),
    "embedder": ("embedder", "gelu", 8, False),
    "embedder_joined": ("embedder_joined", "gelu_approx", 9, True),
    "multi_label": ("multi_label", "gelu", 10, False),
}
TEXTS = ("The film was GOOD!", "Anna lives in Paris.", "unables berts", "Where does ANNA live?")


def fingerprint(array: np.ndarray) -> float:
    """sum(x * sin(position + 1)) in float64: changes under any transposition, permutation or value change."""
    flat = array.astype(np.float64).ravel()
    return float(np.dot(flat, np.sin(np.arange(1, flat.size + 1, dtype=np.float64))))


def vocab_tokens(cased: bool) -> list[str]:
    """120 tokens: the special tokens, WORDS (capitalised too when cased), then filler pieces."""
    words = WORDS + [w.capitalize() for w in WORDS if w.isalpha() and w != w.capitalize()] if cased else WORDS
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    return tokens + [f"x{i}" for i in range(120 - len(tokens))]


def config(hidden_act: str):
    from keras_bert_lite import BertConfig

    return BertConfig(
        vocab_size=120,
        hidden_size=32,
        num_layers=2,
        num_heads=4,
        intermediate_size=64,
        hidden_act=hidden_act,
        max_position_embeddings=64,
        hidden_dropout=0.0,
        attention_dropout=0.0,
    )


def set_weights(model, seed: int) -> None:
    """Every variable from numpy's generator, in the order of its path: LayerNorm gammas 1 + N(0, 0.1), other
    weights N(0, 0.2) (embeddings N(0, 0.5))."""
    rng = np.random.default_rng(seed)
    for variable in sorted(model.weights, key=lambda v: v.path):
        shape = tuple(variable.shape)
        if variable.path.endswith("gamma"):
            value = 1.0 + 0.1 * rng.standard_normal(shape)
        elif "embeddings" in variable.path:
            value = 0.5 * rng.standard_normal(shape)
        else:
            value = 0.2 * rng.standard_normal(shape)
        variable.assign(value.astype(np.float32))


def build(name: str):
    """(model, export_hf keyword arguments except the vocabulary, cased) of MODELS[name]."""
    from keras_bert_lite import (
        build_classifier,
        build_embedder,
        build_encoder,
        build_multiple_choice,
        build_pretrainer,
        build_span_labeler,
        build_token_classifier,
    )

    kind, hidden_act, seed, cased = MODELS[name]
    cfg = config(hidden_act)
    model, kwargs = {
        "encoder": lambda: (build_encoder(cfg), {}),
        "pretrainer": lambda: (build_pretrainer(cfg), {}),
        "classifier": lambda: (build_classifier(cfg, 3, dropout=0.1), {"labels": CLASS_LABELS}),
        "regression": lambda: (build_classifier(cfg, 1, dropout=0.1), {"task_type": "regression"}),
        "token_classifier": lambda: (build_token_classifier(cfg, 5, dropout=0.1), {"labels": TAG_LABELS}),
        "span_labeler": lambda: (build_span_labeler(cfg), {}),
        "multiple_choice": lambda: (build_multiple_choice(cfg, CHOICES, dropout=0.1), {}),
        "embedder": lambda: (build_embedder(cfg, normalize=True), {"seq_length": EMBEDDER_SEQ}),
        "embedder_joined": lambda: (build_embedder(cfg, pooling=("cls", "max", "mean_sqrt_len")), {}),
        "multi_label": lambda: (
            build_classifier(cfg, 4, dropout=0.1),
            {"labels": TOPIC_LABELS, "task_type": "multi_label"},
        ),
    }[kind]()
    set_weights(model, seed)
    return model, kwargs, cased


def export(name: str, directory: str) -> str:
    """Exports MODELS[name] with its vocabulary (written beside `directory`) to `directory`."""
    from keras_bert_lite.export.hf import export_hf
    from keras_bert_lite.text import Vocab

    model, kwargs, cased = build(name)
    vocab = Vocab(vocab_tokens(cased), source=f"{name} vocab", lower_case=not cased)
    return export_hf(model, directory, vocab=vocab, **kwargs)


if __name__ == "__main__":
    out = sys.argv[1]
    for model_name in MODELS:
        print("exported", export(model_name, os.path.join(out, model_name)))
