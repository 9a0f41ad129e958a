"""Test helpers for kbl-pretrain runs: a small synthetic vocabulary and corpora, and a probe on the training loop
that records what the run really consumed and applied.

`install_probe(monkeypatch)` replaces the runner's `Trainer` by a subclass that records, from inside the
compiled loop (`tf.py_function`), every batch the loop consumed (after masking, as the model saw it) and, at
every `optimizer.apply_gradients` call, the gradients passed in (dense), the weights before the update, the loss
scale (1 without a `LossScaleOptimizer`), and the inner optimizer's `gradient_norm` and `iterations` before the
update. Nothing of the run is changed.
"""

from __future__ import annotations

import os

import numpy as np
import tensorflow as tf

from keras_bert_lite import BertConfig
from keras_bert_lite.runners import pretrain as pretrain_runner

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
# Whole words of the vocabulary: one piece each.
WORDS = (
    "the a of to and in is it that was for on are with as his they be at one have this from by hot word "
    "but what some we can out other were all there when up use your how said an each she which do their "
    "time if will way about many then them write would like so these her long make thing see him two"
).split()
LETTERS = list("abcdefghijklmnopqrstuvwxyz")
PUNCTUATION = list(".,!?")
TOKENS = SPECIAL + PUNCTUATION + WORDS + [c for c in LETTERS if c not in WORDS] + ["##" + c for c in LETTERS]


def write_vocab(directory) -> str:
    """A ~150-token uncased vocabulary: any lower-case word tokenizes (out-of-vocabulary words into letters)."""
    path = os.path.join(directory, "vocab.txt")
    with open(path, "w") as f:
        f.write("\n".join(TOKENS) + "\n")
    return path


def write_config(directory, name="config.json", **overrides) -> str:
    """A tiny BertConfig JSON for the synthetic vocabulary, dropout off unless overridden."""
    settings = dict(
        vocab_size=len(TOKENS),
        hidden_size=16,
        num_layers=1,
        num_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        hidden_dropout=0.0,
        attention_dropout=0.0,
    )
    settings.update(overrides)
    path = os.path.join(directory, name)
    BertConfig(**settings).to_json(path)
    return path


def write_corpus(path, documents) -> str:
    """Documents (lists of sentence strings) in the original format: a sentence per line, blank line between."""
    with open(path, "w") as f:
        f.write("\n\n".join("\n".join(doc) for doc in documents) + "\n")
    return str(path)


def random_words_corpus(path, docs=60, sentences=8, seed=0) -> str:
    """Sentences of 4-12 words; about a third of the words are outside the vocabulary (several pieces each)."""
    rng = np.random.default_rng(seed)

    def word():
        if rng.random() < 0.35:
            return "".join(rng.choice(LETTERS, size=rng.integers(2, 6)))
        return str(rng.choice(WORDS))

    documents = [
        [" ".join(word() for _ in range(rng.integers(4, 13))) + "." for _ in range(sentences)] for _ in range(docs)
    ]
    return write_corpus(path, documents)


def run_args(corpus, vocab, config, model_dir, **flags) -> list[str]:
    """kbl-pretrain arguments for a small run; `flags` add or override (True: a bare switch)."""
    settings = {
        "input_files": corpus,
        "vocab": vocab,
        "lower_case": "true",
        "config": config,
        "model_dir": model_dir,
        "seq_length": 32,
        "batch_size": 8,
        "steps": 4,
        "max_predictions": 5,
        "window_docs": 8,
        "shuffle_buffer": 50,
        "learning_rate": 1e-3,
        "warmup_steps": 0,
        "quiet": True,
    }
    settings.update(flags)
    args = []
    for key, value in settings.items():
        if value is False or value is None:
            continue
        args += [f"--{key}"] + ([] if value is True else [str(value)])
    return args


def pretrain(args):
    """Runs kbl-pretrain's `parse_args` + `run`; returns the history."""
    return pretrain_runner.run(pretrain_runner.parse_args(args))


def install_probe(monkeypatch) -> list:
    """Replaces the runner's Trainer by a recording subclass; returns the list each new trainer appends itself to."""
    trainers = []

    class ProbeTrainer(pretrain_runner.Trainer):
        def __init__(self, model, optimizer, *args, **kwargs):
            super().__init__(model, optimizer, *args, **kwargs)
            self.initial_weights = [v.numpy() for v in model.trainable_variables]
            self.batches, self.updates = [], []
            self._record_updates(optimizer)
            trainers.append(self)

        def _replica_step(self, batch):
            flat = tf.nest.flatten(batch)

            def record(*tensors):
                self.batches.append(tf.nest.pack_sequence_as(batch, [t.numpy() for t in tensors]))

            tf.py_function(record, flat, [])
            return super()._replica_step(batch)

        def _record_updates(self, optimizer):
            original = optimizer.apply_gradients
            inner = getattr(optimizer, "inner_optimizer", optimizer)

            def apply_gradients(grads_and_vars):
                pairs = list(grads_and_vars)
                grads = [tf.convert_to_tensor(g) for g, _ in pairs]
                variables = [v for _, v in pairs]
                paths = [v.path for v in variables]
                scale = getattr(optimizer, "dynamic_scale", None)
                state = [
                    tf.cast(tf.convert_to_tensor(x), tf.float64)
                    for x in (1.0 if scale is None else scale, inner.gradient_norm, inner.iterations)
                ]

                def record(*tensors):
                    values = [t.numpy() for t in tensors]
                    n = len(grads)
                    self.updates.append(
                        {
                            "paths": paths,
                            "grads": values[:n],
                            "weights": values[n : 2 * n],
                            "scale": float(values[2 * n]),
                            "gradient_norm": float(values[2 * n + 1]),
                            "iterations": int(values[2 * n + 2]),
                        }
                    )

                tf.py_function(record, grads + [tf.convert_to_tensor(v) for v in variables] + state, [])
                return original(pairs)

            optimizer.apply_gradients = apply_gradients

    monkeypatch.setattr(pretrain_runner, "Trainer", ProbeTrainer)
    return trainers


def final_weights(trainer) -> list[np.ndarray]:
    return [v.numpy() for v in trainer.model.trainable_variables]


def stack_batches(batches):
    """The consumed batches as one batch: {name: [steps * batch, ...]} over features and labels."""
    features = {k: np.concatenate([b[0][k] for b in batches]) for k in batches[0][0]}
    labels = {k: np.concatenate([b[1][k] for b in batches]) for k in batches[0][1]}
    return {**features, **labels}


def unmasked_ids(batch) -> np.ndarray:
    """The token ids before masking: input_word_ids with each masked position's original id put back."""
    ids = batch["input_word_ids"].copy()
    rows, slots = np.nonzero(batch["masked_lm_weights"])
    ids[rows, batch["masked_lm_positions"][rows, slots]] = batch["masked_lm_ids"][rows, slots]
    return ids
