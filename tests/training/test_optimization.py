"""Schedule, BertAdamW and BertLamb against NumPy re-implementations of the reference formulas, in model.fit
(XLA, mixed precision, loss scaling), serialization, gradient accumulation and MirroredStrategy."""

import json
import math
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert_lite as kbl
from keras_bert_lite.training import BertAdamW, BertLamb, WarmupLinearDecay, create_optimizer

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------------------------------------ schedule


@pytest.mark.parametrize(
    "step, expected",
    [
        (0, 0.0),  # warmup starts at 0
        (4, 0.4),  # mid-warmup: 1.0 * 4 / 10
        (9, 0.9),  # last warmup step
        (10, 0.9),  # end of warmup: polynomial decay from step 0, 1.0 * (1 - 10 / 100), not the peak
        (55, 0.45),  # mid-decay: 1 - 55 / 100
        (99, 0.01),
        (100, 0.0),  # end
        (150, 0.0),  # past the end: clamped at 0
    ],
)
def test_schedule_matches_original_composition(step, expected):
    schedule = WarmupLinearDecay(1.0, total_steps=100, warmup_steps=10)
    assert float(schedule(step)) == pytest.approx(expected, abs=1e-7)


def test_schedule_realistic_values_and_no_warmup():
    schedule = WarmupLinearDecay(2e-5, total_steps=1000, warmup_steps=100)
    got = [float(schedule(s)) for s in (0, 50, 100, 550, 1000)]
    np.testing.assert_allclose(got, [0.0, 1e-5, 1.8e-5, 0.9e-5, 0.0], rtol=1e-6, atol=1e-12)
    no_warmup = WarmupLinearDecay(2e-5, total_steps=1000)
    np.testing.assert_allclose([float(no_warmup(s)) for s in (0, 500)], [2e-5, 1e-5], rtol=1e-6)


def test_schedule_serializes_and_validates():
    schedule = WarmupLinearDecay(3e-4, total_steps=50, warmup_steps=5)
    restored = keras.optimizers.schedules.deserialize(keras.optimizers.schedules.serialize(schedule))
    assert isinstance(restored, WarmupLinearDecay)
    assert restored.get_config() == schedule.get_config()
    assert float(restored(7)) == pytest.approx(float(schedule(7)))
    with pytest.raises(ValueError):
        WarmupLinearDecay(1e-4, total_steps=0)
    with pytest.raises(ValueError):
        WarmupLinearDecay(1e-4, total_steps=10, warmup_steps=-1)


# ------------------------------------------------------------------------------------------------ references


def _global_clip(grads, clip_norm):
    norm = math.sqrt(sum(float(np.sum(g * g)) for g in grads))
    return [g * clip_norm / max(norm, clip_norm) for g in grads], norm


def numpy_bert_adamw(
    params, grad_steps, lrs, excluded, weight_decay=0.01, beta_1=0.9, beta_2=0.999, eps=1e-6, clip_norm=1.0
):
    """google-research/bert: tf.clip_by_global_norm(grads, 1.0), then AdamWeightDecayOptimizer.apply_gradients:
    next_m = b1 m + (1-b1) g; next_v = b2 v + (1-b2) g^2; update = next_m / (sqrt(next_v) + eps)
    (no bias correction); update += wd * param unless the name matches an exclusion; param -= lr * update."""
    params = [p.astype(np.float64) for p in params]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    for grads, lr in zip(grad_steps, lrs):
        grads = [g.astype(np.float64) for g in grads]
        if clip_norm:
            grads, _ = _global_clip(grads, clip_norm)
        for i, g in enumerate(grads):
            m[i] = beta_1 * m[i] + (1 - beta_1) * g
            v[i] = beta_2 * v[i] + (1 - beta_2) * g * g
            update = m[i] / (np.sqrt(v[i]) + eps)
            if not excluded[i]:
                update = update + weight_decay * params[i]
            params[i] = params[i] - lr * update
    return params


def numpy_lamb(params, grad_steps, lrs, excluded, weight_decay=0.01, beta_1=0.9, beta_2=0.999, eps=1e-6, clip_norm=1.0):
    """You et al. 2019 as in tensorflow/models lamb.py: bias-corrected Adam direction, + wd * w, trust ratio
    ||w|| / ||update|| (1 if either norm is 0); excluded variables: no decay and ratio 1."""
    params = [p.astype(np.float64) for p in params]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    for t, (grads, lr) in enumerate(zip(grad_steps, lrs), start=1):
        grads = [g.astype(np.float64) for g in grads]
        if clip_norm:
            grads, _ = _global_clip(grads, clip_norm)
        for i, g in enumerate(grads):
            m[i] = beta_1 * m[i] + (1 - beta_1) * g
            v[i] = beta_2 * v[i] + (1 - beta_2) * g * g
            update = (m[i] / (1 - beta_1**t)) / (np.sqrt(v[i] / (1 - beta_2**t)) + eps)
            ratio = 1.0
            if not excluded[i]:
                update = update + weight_decay * params[i]
                w_norm, u_norm = np.linalg.norm(params[i]), np.linalg.norm(update)
                ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
            params[i] = params[i] - ratio * lr * update
    return params


def _pretrainer_variables(tiny_config):
    model = kbl.build_pretrainer(tiny_config.replace(num_layers=1))
    return model.trainable_variables


def _expected_excluded(path):
    """LayerNorm gamma/beta and every bias, decided from the variable's role (not from the regex)."""
    layer, name = path.split("/")[-2:]
    return ("layer_norm" in layer and name in ("gamma", "beta")) or name == "bias" or name.endswith("_bias")


def _random_grad_steps(variables, steps, scale, seed=0):
    rng = np.random.default_rng(seed)
    return [[(scale * rng.standard_normal(v.shape)).astype(np.float32) for v in variables] for _ in range(steps)]


SCHEDULE = dict(peak=0.1, total_steps=10, warmup_steps=2)  # lrs 0, 0.05, 0.08 for updates 0, 1, 2


def _run_optimizer(optimizer, variables, grad_steps):
    for grads in grad_steps:
        optimizer.apply([tf.constant(g) for g in grads], variables)
    return [v.numpy() for v in variables]


# ------------------------------------------------------------------------------------------------ AdamW


def test_bert_adamw_matches_original_update(tiny_config):
    variables = _pretrainer_variables(tiny_config)
    paths = [v.path for v in variables]
    excluded = [_expected_excluded(p) for p in paths]
    # the decay exclusions land where the original's would: every LayerNorm gamma/beta and bias, nothing else
    assert {p for p, e in zip(paths, excluded) if e} >= {
        "embeddings/layer_norm/gamma",
        "embeddings/layer_norm/beta",
        "layer_0/attention/qkv_bias",
        "layer_0/attention/output_bias",
        "layer_0/attention_layer_norm/gamma",
        "layer_0/intermediate/bias",
        "layer_0/output_layer_norm/beta",
        "masked_lm/output_bias",
        "masked_lm/layer_norm/gamma",
        "pooler/dense/bias",
    }
    assert {p for p, e in zip(paths, excluded) if not e} == {
        "embeddings/word_embeddings",
        "embeddings/position_embeddings",
        "embeddings/token_type_embeddings",
        "layer_0/attention/qkv_kernel",
        "layer_0/attention/output_kernel",
        "layer_0/intermediate/kernel",
        "layer_0/output/kernel",
        "pooler/dense/kernel",
        "masked_lm/transform/kernel",
        "next_sentence/dense/kernel",
    }

    initial = [v.numpy() for v in variables]
    grad_steps = _random_grad_steps(variables, steps=3, scale=0.05)
    norms = [_global_clip(g, 1.0)[1] for g in grad_steps]
    assert min(norms) > 5.0, norms  # clipping is active at every step

    schedule = WarmupLinearDecay(SCHEDULE["peak"], SCHEDULE["total_steps"], SCHEDULE["warmup_steps"])
    optimizer = BertAdamW(learning_rate=schedule)  # defaults: wd 0.01, eps 1e-6, clip 1.0
    assert [optimizer.uses_weight_decay(v) for v in variables] == [not e for e in excluded]
    got = _run_optimizer(optimizer, variables, grad_steps)

    lrs = [0.0, 0.05, 0.08]
    expected = numpy_bert_adamw(initial, grad_steps, lrs, excluded)
    for path, g, e in zip(paths, got, expected):
        np.testing.assert_allclose(g, e, atol=1e-6, rtol=0, err_msg=path)

    # The test is sensitive to each ingredient: each variant moves some weight by far more than 1e-6.
    def max_diff(ref):
        return max(float(np.max(np.abs(g - r))) for g, r in zip(got, ref))

    assert max_diff(numpy_bert_adamw(initial, grad_steps, lrs, excluded, clip_norm=None)) > 1e-3
    assert max_diff(numpy_bert_adamw(initial, grad_steps, lrs, [False] * len(excluded))) > 1e-5
    assert max_diff(numpy_bert_adamw(initial, grad_steps, lrs, excluded, eps=1e-8)) > 1e-5
    assert max_diff(numpy_lamb(initial, grad_steps, lrs, [True] * len(excluded))) > 1e-3  # bias-corrected Adam


def test_indexed_slices_gradients_are_clipped_by_their_dense_norm():
    """A lookup gradient has one row per occurrence; the clipped norm must be that of the summed rows."""

    def run(grad):
        var = keras.Variable(np.ones((4, 2), np.float32), name="table")
        optimizer = BertAdamW(learning_rate=0.1, weight_decay_rate=0.0)
        optimizer.apply([grad], [var])
        return var.numpy()

    rows = tf.constant([[0.3, -0.4], [0.3, -0.4], [0.3, -0.4], [0.0, 0.2]])
    sparse = tf.IndexedSlices(rows, tf.constant([1, 1, 1, 2]), dense_shape=tf.constant([4, 2]))
    dense = tf.convert_to_tensor(sparse)  # row 1 = (0.9, -1.2): dense norm 1.513
    assert float(tf.linalg.global_norm([sparse])) < 1.0 < float(tf.norm(dense))  # row-wise norm: 0.906
    np.testing.assert_allclose(run(sparse), run(dense), atol=1e-7)
    expected = numpy_bert_adamw([np.ones((4, 2))], [[dense.numpy()]], [0.1], [True], weight_decay=0.0)[0]
    np.testing.assert_allclose(run(sparse), expected, atol=1e-6)


def test_keras_exclude_from_weight_decay_is_also_honoured():
    kernel = keras.Variable(np.ones((2, 2), np.float32), name="kernel")
    special = keras.Variable(np.ones((2,), np.float32), name="special")
    optimizer = BertAdamW(learning_rate=0.1)
    optimizer.exclude_from_weight_decay(var_names=["special"])
    optimizer.build([kernel, special])
    assert optimizer.uses_weight_decay(kernel) and not optimizer.uses_weight_decay(special)


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="twice"):
        BertAdamW(weight_decay=0.01)
    with pytest.raises(ValueError, match="accumulation_steps"):
        BertAdamW(gradient_accumulation_steps=2)
    with pytest.raises(ValueError, match="Unknown optimizer"):
        create_optimizer("sgd", learning_rate=1e-3, total_steps=10)


# ------------------------------------------------------------------------------------------------ LAMB


def test_bert_lamb_matches_reference(tiny_config):
    variables = _pretrainer_variables(tiny_config)
    excluded = [_expected_excluded(v.path) for v in variables]
    initial = [v.numpy() for v in variables]
    grad_steps = _random_grad_steps(variables, steps=3, scale=0.05, seed=1)
    optimizer = create_optimizer(
        "lamb",
        learning_rate=SCHEDULE["peak"],
        total_steps=SCHEDULE["total_steps"],
        warmup_steps=SCHEDULE["warmup_steps"],
    )
    assert isinstance(optimizer, BertLamb)
    got = _run_optimizer(optimizer, variables, grad_steps)
    expected = numpy_lamb(initial, grad_steps, [0.0, 0.05, 0.08], excluded)
    for v, g, e in zip(variables, got, expected):
        np.testing.assert_allclose(g, e, atol=1e-6, rtol=0, err_msg=v.path)
    # sensitive to the trust ratio and to its exclusion for LayerNorm/bias
    no_ratio = numpy_lamb(initial, grad_steps, [0.0, 0.05, 0.08], [True] * len(excluded))
    assert max(float(np.max(np.abs(g - r))) for g, r in zip(got, no_ratio)) > 1e-3


# ------------------------------------------------------------------------------------------------ model.fit


def _small_model(num_outputs):
    """Embedding (sparse gradients) -> LayerNorm -> dense layers: every kind of variable, compiles fast."""
    keras.utils.set_random_seed(3)
    ids = keras.Input((6,), dtype="int32", name="ids")
    x = keras.layers.Embedding(11, 8, name="embeddings")(ids)
    x = keras.layers.LayerNormalization(name="layer_norm")(x)
    x = keras.layers.GlobalAveragePooling1D()(x)
    x = keras.layers.Dense(16, activation="gelu", name="hidden")(x)
    out = keras.layers.Dense(num_outputs, dtype="float32", name="head")(x)
    return keras.Model(ids, out)


def _classification_data(n=48, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 11, size=(n, 6)).astype("int32")
    return x, (x[:, 0] % 3).astype("int32")


@pytest.mark.parametrize("name, policy", [("adamw", "float32"), ("lamb", "mixed_bfloat16")])
def test_fit_with_xla_trains(name, policy):
    keras.mixed_precision.set_global_policy(policy)
    model = _small_model(3)
    optimizer = create_optimizer(name, learning_rate=1e-2 if name == "adamw" else 5e-2, total_steps=60, warmup_steps=6)
    model.compile(optimizer, keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=True)
    x, y = _classification_data()
    losses = model.fit(x, y, batch_size=8, epochs=10, verbose=0).history["loss"]
    assert all(math.isfinite(loss) for loss in losses), losses
    assert losses[-1] < 0.7 * losses[0], losses
    assert int(optimizer.iterations) == 60
    assert all(np.isfinite(w).all() for w in model.get_weights())


def test_fit_mixed_float16_with_loss_scale_optimizer():
    keras.mixed_precision.set_global_policy("mixed_float16")
    model = _small_model(3)
    model.compile(
        create_optimizer("adamw", learning_rate=1e-2, total_steps=30, warmup_steps=3),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    assert isinstance(model.optimizer.inner_optimizer, BertAdamW)
    x, y = _classification_data()
    losses = model.fit(x, y, batch_size=8, epochs=5, verbose=0).history["loss"]
    assert all(math.isfinite(loss) for loss in losses) and losses[-1] < losses[0], losses


# ------------------------------------------------------------------------------------------------ serialization


@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_serialize_round_trip(name):
    optimizer = create_optimizer(
        name, learning_rate=3e-4, total_steps=100, warmup_steps=10, weight_decay=0.02, accumulation_steps=4
    )
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    assert type(restored) is type(optimizer)
    assert restored.get_config() == optimizer.get_config()
    assert isinstance(restored._learning_rate, WarmupLinearDecay)
    assert (restored.weight_decay_rate, restored.epsilon, restored.accumulation_steps) == (0.02, 1e-6, 4)
    assert restored.global_clipnorm == 1.0 and restored.weight_decay_exclusions == ("LayerNorm", "layer_norm", "bias")


def test_model_with_optimizer_saves_and_reloads(tmp_path):
    model = _small_model(3)
    model.compile(
        create_optimizer("adamw", learning_rate=1e-2, total_steps=20, warmup_steps=2, accumulation_steps=2),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    x, y = _classification_data(n=16)
    model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    path = str(tmp_path / "model.keras")
    model.save(path)
    reloaded = keras.models.load_model(path)
    assert isinstance(reloaded.optimizer, BertAdamW)
    assert reloaded.optimizer.get_config() == model.optimizer.get_config()
    for a, b in zip(model.optimizer.variables, reloaded.optimizer.variables):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # training continues identically from the restored state (moments, step count, exclusions)
    model.fit(x, y, batch_size=4, epochs=1, verbose=0, shuffle=False)
    reloaded.fit(x, y, batch_size=4, epochs=1, verbose=0, shuffle=False)
    for a, b in zip(model.get_weights(), reloaded.get_weights()):
        np.testing.assert_allclose(a, b, atol=1e-6)


# ------------------------------------------------------------------------------------------------ accumulation


@pytest.mark.parametrize("name, jit", [("adamw", True), ("lamb", False)])
def test_accumulated_micro_batches_equal_one_big_batch(name, jit):
    """3 micro-batches of 4 == 1 batch of 12 (mean loss), over 4 updates, with clipping active and a schedule
    that changes the rate at every update (so the schedule must count updates, not micro-batches)."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 11, size=(24, 6)).astype("int32")
    y = (5.0 * rng.standard_normal((24, 1))).astype("float32")  # large errors: gradient norm 14-30 >> 1

    def train(accumulation_steps, batch_size):
        model = _small_model(1)
        optimizer = create_optimizer(
            name, learning_rate=0.05, total_steps=6, warmup_steps=2, accumulation_steps=accumulation_steps
        )
        model.compile(optimizer, "mse", jit_compile=jit)
        model.fit(x, y, batch_size=batch_size, epochs=2, verbose=0, shuffle=False)
        return model.get_weights(), int(optimizer.iterations)

    big, big_updates = train(1, 12)
    accumulated, accumulated_updates = train(3, 4)
    assert big_updates == accumulated_updates == 4
    for a, b in zip(accumulated, big):  # the mean of 3 micro-batch gradients is the 12-example one up to
        np.testing.assert_allclose(a, b, atol=2e-6, rtol=0)  # rounding: up to 1.3e-6 on weights ~1 here
    assert max(float(np.max(np.abs(a - w))) for a, w in zip(big, _small_model(1).get_weights())) > 1e-2


# ------------------------------------------------------------------------------------------------ distribution

_MIRRORED_SCRIPT = textwrap.dedent("""
    import json, os, sys
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import keras, numpy as np
    from keras_bert_lite.training import create_optimizer

    rng = np.random.default_rng(0)
    x = rng.integers(0, 7, size=(16, 5)).astype("int32")
    y = (3.0 * rng.normal(size=(16, 1))).astype("float32")

    def make():
        keras.utils.set_random_seed(1)
        ids = keras.Input((5,), dtype="int32")
        h = keras.layers.LayerNormalization(name="layer_norm")(keras.layers.Embedding(7, 6, name="emb")(ids))
        return keras.Model(ids, keras.layers.Dense(1, name="out")(keras.layers.Flatten()(h)))

    def optimizer(acc, clip):
        return create_optimizer("adamw", learning_rate=0.05, total_steps=10, warmup_steps=2,
                                accumulation_steps=acc, global_clipnorm=clip)

    def fit(strategy, acc, batch, clip):
        with strategy.scope():
            model = make()
            model.compile(optimizer(acc, clip), "mse")
        model.fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=False)
        return model.get_weights()

    def custom_loop(strategy, acc, batch, clip):
        with strategy.scope():
            model = make()
            opt = optimizer(acc, clip)
            opt.build(model.trainable_variables)
        data = strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices((x, y)).batch(batch))

        @tf.function
        def step(xb, yb):
            def replica_step(xb, yb):
                with tf.GradientTape() as tape:
                    per_example = tf.reduce_mean(tf.square(model(xb, training=True) - yb), axis=-1)
                    loss = tf.nn.compute_average_loss(per_example, global_batch_size=batch)
                grads = tape.gradient(loss, model.trainable_variables)
                opt.apply_gradients(zip(grads, model.trainable_variables))
            strategy.run(replica_step, args=(xb, yb))

        for xb, yb in data:
            step(xb, yb)
        return model.get_weights()

    def diff(a, b):
        return max(float(np.max(np.abs(p - q))) for p, q in zip(a, b))

    single = tf.distribute.get_strategy()
    mirrored = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    reference = fit(single, 1, 8, None)
    clipped = fit(single, 1, 8, 0.05)  # clipping active at every step (gradient norms are ~1-30)
    print("RESULT " + json.dumps({
        "replicas": mirrored.num_replicas_in_sync,
        "fit": diff(reference, fit(mirrored, 1, 8, None)),
        "fit_accumulated": diff(reference, fit(mirrored, 2, 4, None)),
        "loop_accumulated": diff(reference, custom_loop(mirrored, 2, 4, None)),
        "clipping_changes_result": diff(reference, clipped),
        "fit_clipped": diff(clipped, fit(mirrored, 1, 8, 0.05)),
        "loop_clipped": diff(clipped, custom_loop(mirrored, 1, 8, 0.05)),
        "loop_accumulated_clipped": diff(clipped, custom_loop(mirrored, 2, 4, 0.05)),
    }))
    sys.stdout.flush()
    os._exit(0)  # skip the slow interpreter teardown of the strategy's threads
""")


def test_mirrored_strategy_matches_single_device():
    """Two CPU replicas, model.fit and a custom strategy.run step, with and without accumulation and with
    global-norm clipping active, give the single-device result (the clip applies to the all-reduced
    gradient, not to each replica's)."""
    env = dict(
        os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), TF_CPP_MIN_LOG_LEVEL="3"
    )
    proc = subprocess.run(
        [sys.executable, "-c", _MIRRORED_SCRIPT],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(REPO_ROOT),
        timeout=300,
    )
    match = re.search(r"^RESULT (.*)$", proc.stdout, re.M)
    assert match, proc.stdout[-2000:] + proc.stderr[-4000:]
    result = json.loads(match.group(1))
    assert result["replicas"] == 2
    assert result["fit"] < 1e-6 and result["fit_accumulated"] < 1e-6 and result["loop_accumulated"] < 1e-6, result
    assert result["clipping_changes_result"] > 1e-3, result
    assert max(result["fit_clipped"], result["loop_clipped"], result["loop_accumulated_clipped"]) < 1e-6, result
