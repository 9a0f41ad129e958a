"""kbl-pretrain's training flags, each through the command line (`parse_args` + `run`) and each held to its effect,
so that a flag the runner silently ignored fails its test.

A probe on the training loop (`probes.install_probe`) records what the run really consumed and applied: the
batches its compiled loop took, and at every optimizer call the gradients, the weights before the update and
the loss scale. The tiny model has dropout off, so its arithmetic is deterministic.

- `--optimizer lamb` vs `adamw`: every update of each run equals its own rule (google-research/bert's
  AdamWeightDecayOptimizer; LAMB of You et al. 2019 as tensorflow/models has it), recomputed in NumPy from the
  recorded gradients and weights, and not the other rule.
- `--whole_word_masking`: in the batches consumed, every masked piece's whole word is masked.
- `--accumulation_steps 2 --batch_size B` ends with the weights of `--batch_size 2B` and half the steps.
- `--mixed_precision fp16`: the loss is scaled, and a step with an injected inf gradient is skipped by the loss
  scaler (weights unchanged, scale halved) instead of stopping or poisoning the run.
- `--short_seq_prob`: the lengths of the consumed sequences follow google-research/bert's
  create_instances_from_document (ported below) for 0 and for 1.
"""

from __future__ import annotations

import random
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.models.pretrainer import BertPretrainer
from tests.training import probes


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("flags")
    return {
        "vocab": probes.write_vocab(directory),
        "config": probes.write_config(directory),
        "corpus": probes.random_words_corpus(directory / "corpus.txt"),
        "dir": directory,
    }


@pytest.fixture
def trainers(monkeypatch):
    return probes.install_probe(monkeypatch)


def args(files, model_dir, **flags):
    return probes.run_args(files["corpus"], files["vocab"], files["config"], str(model_dir), **flags)


# ------------------------------------------------------------------------------------------------ optimizers

BETA_1, BETA_2, EPSILON = 0.9, 0.999, 1e-6


def excluded(path):
    """No weight decay (nor, in LAMB, trust ratio): the original's exclusions ["LayerNorm", "layer_norm", "bias"]."""
    return re.search("LayerNorm|layer_norm|bias", path) is not None


def reference_update(rule, w, g, m, v, lr, t, decay, skip_decay):
    """One variable's update in float64: (new w, new m, new v). `g` is already clipped; `t` is 1-based."""
    m = BETA_1 * m + (1 - BETA_1) * g
    v = BETA_2 * v + (1 - BETA_2) * g * g
    if rule == "adamw":  # google-research/bert optimization.py: no bias correction, decay in the update
        update = m / (np.sqrt(v) + EPSILON)
        if not skip_decay:
            update = update + decay * w
        return w - lr * update, m, v
    # LAMB: bias-corrected Adam direction, plus decay, scaled by the trust ratio ||w|| / ||update||.
    update = (m / (1 - BETA_1**t)) / (np.sqrt(v / (1 - BETA_2**t)) + EPSILON)
    if skip_decay:
        return w - lr * update, m, v
    update = update + decay * w
    w_norm, u_norm = np.linalg.norm(w), np.linalg.norm(update)
    ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
    return w - ratio * lr * update, m, v


def worst_prediction_error(rule, updates, final, peak_lr, decay):
    """Replays the run's updates with `rule`: each step from the recorded weights and gradients (the moments from
    the recorded gradients); returns the largest |predicted - actual| weight over all steps and variables."""
    steps = len(updates)
    after = [u["weights"] for u in updates[1:]] + [final]
    m = [np.zeros(g.shape) for g in updates[0]["grads"]]
    v = [np.zeros(g.shape) for g in updates[0]["grads"]]
    worst = 0.0
    for k, (record, actual) in enumerate(zip(updates, after)):
        grads = [g.astype(np.float64) for g in record["grads"]]
        clip = 1.0 / max(np.sqrt(sum(float((g * g).sum()) for g in grads)), 1.0)  # global norm 1.0
        lr = peak_lr * (1 - k / steps)  # no warmup, linear decay
        for i, (path, w, g) in enumerate(zip(record["paths"], record["weights"], grads)):
            predicted, m[i], v[i] = reference_update(
                rule, w.astype(np.float64), g * clip, m[i], v[i], lr, k + 1, decay, excluded(path)
            )
            worst = max(worst, float(np.abs(predicted - actual[i]).max()))
    return worst


def test_lamb_and_adamw_each_follow_their_own_update_rule(files, trainers, tmp_path):
    peak_lr, decay, steps = 0.01, 0.5, 3
    errors = {}
    for name in ("adamw", "lamb"):
        probes.pretrain(
            args(files, tmp_path / name, optimizer=name, steps=steps, learning_rate=peak_lr, weight_decay=decay)
        )
        trainer = trainers[-1]
        assert len(trainer.updates) == steps
        final = probes.final_weights(trainer)
        errors[name] = {
            rule: worst_prediction_error(rule, trainer.updates, final, peak_lr, decay) for rule in ("adamw", "lamb")
        }
        paths = trainer.updates[0]["paths"]
        assert any(map(excluded, paths)) and not all(map(excluded, paths))
        if name == "lamb":
            # The trust ratio makes a decayed variable's step exactly lr * ||w||, whatever its gradient.
            for k, record in enumerate(trainer.updates):
                after = trainer.updates[k + 1]["weights"] if k + 1 < steps else final
                for path, before, now in zip(paths, record["weights"], after):
                    if not excluded(path):
                        np.testing.assert_allclose(
                            np.linalg.norm(now - before), peak_lr * (1 - k / steps) * np.linalg.norm(before), rtol=1e-4
                        )
    # Each run is its own rule to float32 round-off, and the other rule is off by the size of a step.
    assert errors["adamw"]["adamw"] <= 1e-5 and errors["lamb"]["lamb"] <= 1e-5, errors
    assert errors["adamw"]["lamb"] >= 1e-3 and errors["lamb"]["adamw"] >= 1e-3, errors


# ------------------------------------------------------------------------------------------------ whole words


def test_whole_word_masking_masks_every_piece_of_a_chosen_word(files, trainers, tmp_path):
    vocab = probes.TOKENS
    continuation = np.array([t.startswith("##") for t in vocab])
    special = np.isin(np.arange(len(vocab)), [vocab.index(t) for t in probes.SPECIAL])
    probes.pretrain(
        args(
            files, tmp_path / "run", whole_word_masking=True, seq_length=64, max_predictions=10, batch_size=16, steps=3
        )
    )
    batch = probes.stack_batches(trainers[-1].batches)
    assert len(batch["input_word_ids"]) == 48
    ids = probes.unmasked_ids(batch)
    masked = np.zeros(ids.shape, bool)
    rows, slots = np.nonzero(batch["masked_lm_weights"])
    masked[rows, batch["masked_lm_positions"][rows, slots]] = True
    words_checked = multi_piece = 0
    for row in range(len(ids)):
        # Words: a non-special piece starts one unless it is a ## piece right after a non-special piece.
        maskable = ~special[ids[row]]
        starts = maskable & ~(continuation[ids[row]] & np.r_[False, maskable[:-1]])
        word = np.cumsum(starts) - 1
        for w in np.unique(word[masked[row]]):
            pieces = maskable & (word == w)
            assert masked[row][pieces].all(), (
                f"row {row}: word {[vocab[i] for i in ids[row][pieces]]} is only partly masked "
                f"({masked[row][pieces].astype(int).tolist()})"
            )
            words_checked += 1
            multi_piece += pieces.sum() > 1
    # Not vacuous: many masked words have several pieces (a per-piece masker splits nearly all of them).
    assert multi_piece >= 25, (multi_piece, words_checked)


# ------------------------------------------------------------------------------------------------ accumulation


def test_accumulating_two_batches_equals_one_double_batch(files, trainers, tmp_path):
    # The same examples in the same order: the runner's example stream does not depend on the batch size, so
    # micro-batches 2k and 2k+1 of B are batch k of 2B. Dropout is off. --max_predictions 1 gives every sequence
    # exactly one masked token, so each micro-batch's MLM loss (normalised by its own count of masked tokens)
    # weighs its examples as the double batch does: with counts that differ between micro-batches the mean of
    # the micro-batch gradients is not the double batch's gradient.
    common = dict(max_predictions=1, learning_rate=1e-3)
    probes.pretrain(args(files, tmp_path / "accumulated", accumulation_steps=2, batch_size=4, steps=8, **common))
    probes.pretrain(args(files, tmp_path / "double", batch_size=8, steps=4, **common))
    accumulated, double = trainers
    assert len(accumulated.batches) == 8 and len(double.batches) == 4
    micro = probes.stack_batches(accumulated.batches)
    for key, value in probes.stack_batches(double.batches).items():
        np.testing.assert_array_equal(micro[key], value, err_msg=key)
    a, b = probes.final_weights(accumulated), probes.final_weights(double)
    moved = max(float(np.abs(x - y).max()) for x, y in zip(a, accumulated.initial_weights))
    assert moved >= 1e-3, moved
    assert max(float(np.abs(x - y).max()) for x, y in zip(a, b)) <= 1e-5
    assert accumulated.optimizer.iterations.numpy() == 4


# ------------------------------------------------------------------------------------------------ fp16


def test_fp16_scales_the_loss_and_the_scaler_skips_an_inf_gradient(files, trainers, tmp_path, monkeypatch):
    bad_step, steps = 3, 5
    calls = tf.Variable(0, dtype=tf.int64, trainable=False)
    compute_loss = BertPretrainer.compute_loss

    def poisoned_compute_loss(self, *args, **kwargs):
        """The loss, unchanged; on the `bad_step`-th call its gradient is inf (as an fp16 overflow gives)."""
        loss = compute_loss(self, *args, **kwargs)
        bad = tf.equal(calls.assign_add(1), bad_step)

        @tf.custom_gradient
        def identity(x):
            return tf.identity(x), lambda dy: dy * tf.cast(tf.where(bad, float("inf"), 1.0), dy.dtype)

        return identity(loss)

    monkeypatch.setattr(BertPretrainer, "compute_loss", poisoned_compute_loss)
    history = probes.pretrain(args(files, tmp_path / "run", mixed_precision="fp16", steps=steps, log_every=1))
    trainer = trainers[-1]
    assert isinstance(trainer.optimizer, keras.optimizers.LossScaleOptimizer)
    assert trainer.model.get_layer("masked_lm").compute_dtype == "float16"
    assert [h["step"] for h in history] == list(range(1, steps + 1))
    assert np.isfinite([h["mlm_loss"] + h["nsp_loss"] for h in history]).all()

    updates = trainer.updates
    weights = [u["weights"] for u in updates] + [probes.final_weights(trainer)]
    grad_norm = [np.sqrt(sum(float(np.square(g.astype(np.float64)).sum()) for g in u["grads"])) for u in updates]
    initial_scale = 2.0**15
    for k, record in enumerate(updates, start=1):  # record k: just before step k's update
        assert record["scale"] == (initial_scale if k <= bad_step else initial_scale / 2), (k, record["scale"])
        changed = max(float(np.abs(x - y).max()) for x, y in zip(weights[k - 1], weights[k]))
        if k == bad_step:
            assert not np.isfinite(grad_norm[k - 1])
            assert changed == 0.0, "the step with an inf gradient changed the weights"
            continue
        assert np.isfinite(grad_norm[k - 1]) and changed > 1e-4, (k, changed)
        if k < steps:
            # The optimizer applies the gradient divided by the scale (its gradient_norm, read before the next
            # update, is the norm before clipping).
            np.testing.assert_allclose(grad_norm[k - 1], record["scale"] * updates[k]["gradient_norm"], rtol=1e-5)
    assert updates[bad_step]["gradient_norm"] == updates[bad_step - 1]["gradient_norm"]
    # The loss was scaled: the first step's gradient is 2^15 times the gradient of the loss itself, recomputed
    # here from the weights and the batch of that step; and the optimizer applied the loss's own gradient.
    model = trainer.model
    assert [v.path for v in model.trainable_variables] == updates[0]["paths"]
    for variable, value in zip(model.trainable_variables, updates[0]["weights"]):
        variable.assign(value)
    x, y = trainer.batches[0]
    with tf.GradientTape() as tape:
        loss = compute_loss(model, x, y, model(x, training=True), training=True)
    true_norm = float(
        tf.linalg.global_norm([tf.convert_to_tensor(g) for g in tape.gradient(loss, model.trainable_variables)])
    )
    np.testing.assert_allclose(grad_norm[0], initial_scale * true_norm, rtol=1e-2)
    np.testing.assert_allclose(updates[1]["gradient_norm"], true_norm, rtol=1e-2)
    assert float(trainer.optimizer.dynamic_scale.numpy()) == initial_scale / 2
    assert int(trainer.optimizer.inner_optimizer.iterations.numpy()) == steps - 1


# ------------------------------------------------------------------------------------------------ short_seq_prob


def original_lengths(sentences_per_doc, max_num_tokens, short_seq_prob, rng, n):
    """Sequence lengths ([CLS] A [SEP] B [SEP]) of the first `n` instances of google-research/bert
    create_pretraining_data.py `create_instances_from_document` over documents of one-token sentences, documents
    in order. Ported line by line; with one-token sentences no pair needs truncating."""
    lengths = []
    while len(lengths) < n:
        document = sentences_per_doc
        target_seq_length = max_num_tokens
        if rng.random() < short_seq_prob:
            target_seq_length = rng.randint(2, max_num_tokens)
        current_chunk = 0  # sentences (= tokens) in the chunk
        i = 0
        while i < document:
            current_chunk += 1
            if i == document - 1 or current_chunk >= target_seq_length:
                a_end = rng.randint(1, current_chunk - 1) if current_chunk >= 2 else 1
                tokens_a = a_end
                if current_chunk == 1 or rng.random() < 0.5:
                    target_b_length = target_seq_length - tokens_a
                    random_start = rng.randint(0, document - 1)
                    tokens_b = min(max(target_b_length, 1), document - random_start)
                    i -= current_chunk - a_end
                else:
                    tokens_b = current_chunk - a_end
                lengths.append(tokens_a + tokens_b + 3)
                current_chunk = 0
            i += 1
    return np.array(lengths[:n])


def test_short_seq_prob_shapes_the_lengths_as_the_original(trainers, tmp_path, files):
    seq_length, sentences, batch, steps = 16, 30, 32, 10
    rng = np.random.default_rng(0)
    corpus = probes.write_corpus(
        tmp_path / "one_word_sentences.txt",
        [[str(rng.choice(probes.WORDS)) for _ in range(sentences)] for _ in range(200)],
    )
    reference = random.Random(0)
    stats = {}
    for p in (0.0, 1.0):
        # No shuffling: the consumed sequences are the first ones built, documents in file order.
        probes.pretrain(
            probes.run_args(
                corpus,
                files["vocab"],
                files["config"],
                str(tmp_path / f"p{p}"),
                seq_length=seq_length,
                batch_size=batch,
                steps=steps,
                short_seq_prob=p,
                shuffle_buffer=1,
                max_predictions=2,
            )
        )
        lengths = probes.stack_batches(trainers[-1].batches)["input_mask"].sum(axis=1)
        assert len(lengths) == batch * steps
        # The original's statistics over 300 draws of as many sequences: their mean and spread.
        draws = [original_lengths(sentences, seq_length - 3, p, reference, len(lengths)) for _ in range(300)]
        for name, statistic in (("mean length", np.mean), ("full length share", lambda x: np.mean(x == seq_length))):
            expected = np.array([statistic(d) for d in draws])
            observed = float(statistic(lengths))
            stats[p, name] = expected.mean(), expected.std()
            assert abs(observed - expected.mean()) <= 4 * expected.std() + 1e-9, (
                p,
                name,
                observed,
                expected.mean(),
                expected.std(),
            )
    # The two settings are far apart compared with the spread of either.
    for name in ("mean length", "full length share"):
        (mean_0, sd_0), (mean_1, sd_1) = stats[0.0, name], stats[1.0, name]
        assert mean_0 - mean_1 >= 10 * max(sd_0, sd_1), (name, stats)
