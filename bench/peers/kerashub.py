"""KerasHub side of `bench/compare_peers.py`: `python bench/peers/kerashub.py SPEC.json OUT.json`.

Runs in `bench/.venvs/kerashub` (keras-hub pinned to our TensorFlow/Keras). Modes: "graph" (tf.function /
`compile(jit_compile=False)`) and "xla" (`jit_compile=True`) for forward and pretraining; fine-tuning: "default"
(`BertTextClassifier.compile()` with its defaults: Adam 5e-5, graph mode on CPU, preprocessor padding to its
default `sequence_length`); tokenize: "default" (`keras_hub.models.BertTokenizer`); serving: "tf.function"
(preprocessor + classifier in one tf.function) and "savedmodel" (the same function exported as a text-in
SavedModel, then loaded: whether KerasHub models export that way is part of the result).
KerasHub has no next-sentence head, so its pretraining step is masked LM only (`BertMaskedLM`).
"""

import os
import pathlib
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import common  # noqa: E402
import keras  # noqa: E402
import keras_hub  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.python.util import _pywrap_util_port  # noqa: E402

JIT = {"graph": False, "xla": True}


def backbone(preset: str) -> keras_hub.models.BertBackbone:
    s = common.shape(preset)
    return keras_hub.models.BertBackbone(
        vocabulary_size=common.VOCAB_SIZE,
        num_layers=s["layers"],
        num_heads=s["heads"],
        hidden_dim=s["hidden"],
        intermediate_dim=s["intermediate"],
        max_sequence_length=common.MAX_POSITIONS,
        num_segments=common.TYPE_VOCAB_SIZE,
    )


def inputs(b: dict) -> dict:
    return {
        "token_ids": tf.constant(b["word_ids"]),
        "padding_mask": tf.constant(b["mask"] > 0),
        "segment_ids": tf.constant(b["type_ids"]),
    }


def forward(spec, mode):
    model = backbone(spec["preset"])
    x = inputs(common.synthetic_batch(spec["batch"], spec["seq"]))
    run = tf.function(lambda x: model(x, training=False)["sequence_output"], jit_compile=JIT[mode])
    times = common.time_spec(lambda: run(x), spec, common.tf_sync(spec))  # the framework tensor, as HF
    return common.median_rate(spec["batch"], times)


def pretrain(spec, mode):
    """`train_on_batch` of BertMaskedLM at `mask_positions` (MLM only: KerasHub has no NSP head), AdamW."""
    model = keras_hub.models.BertMaskedLM(backbone(spec["preset"]), preprocessor=None)
    model.compile(optimizer=keras.optimizers.AdamW(1e-4, weight_decay=0.01, global_clipnorm=1.0), jit_compile=JIT[mode])
    b = common.synthetic_batch(spec["batch"], spec["seq"], spec["predictions"])
    x = {**inputs(b), "mask_positions": tf.constant(b["positions"])}
    y, weights = tf.constant(b["ids"]), tf.ones(b["ids"].shape, tf.float32)
    times = common.time_spec(lambda: model.train_on_batch(x, y, sample_weight=weights), spec, common.tf_sync(spec))
    return common.median_rate(spec["batch"], times)


def text_classifier(preset: str, vocab: str) -> keras_hub.models.BertTextClassifier:
    """BertTextClassifier with BertTextClassifierPreprocessor at its default sequence_length."""
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=vocab, lowercase=True)
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(tokenizer)
    return keras_hub.models.BertTextClassifier(backbone(preset), num_classes=2, preprocessor=preprocessor)


def finetune(spec, mode):
    """`fit` on raw strings: the preprocessor tokenises and pads in tf.data, as KerasHub's guides do."""
    data = common.load_json(spec["data"])
    count = spec["batch"] * spec["finetune_batches"]
    classifier = text_classifier(spec["preset"], data["vocab"])
    classifier.compile()
    timer = common.epoch_timer()
    classifier.fit(
        x=data["sample"][:count],
        y=data["labels"][:count],
        batch_size=spec["batch"],
        shuffle=False,
        epochs=spec["warmup_epochs"] + spec["runs"],
        verbose=0,
        callbacks=[timer],
    )
    return {
        **common.median_rate(count, timer.times[spec["warmup_epochs"] :]),
        "warmup_s": sum(timer.times[: spec["warmup_epochs"]]),
        "mean_padded_length": classifier.preprocessor.sequence_length,
        "jit_compile": classifier.jit_compile,
    }


def tokenize(spec, mode):
    """Ids only (the tokenizer adds no special tokens), batches of 1024 lines, in a tf.function; one thread."""
    data = common.load_json(spec["data"])
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=data["vocab"], lowercase=True)
    run = tf.function(lambda text: tokenizer(text).flat_values, input_signature=[tf.TensorSpec([None], tf.string)])
    lines = data["sentences"]
    batches = [tf.constant(lines[i : i + 1024]) for i in range(0, len(lines), 1024)]
    tokens = sum(int(run(b).shape[0]) for b in batches)
    times = common.time_calls(lambda: [run(b).numpy() for b in batches], spec["runs"], spec["warmup"])
    return {
        **common.median_rate(len(lines), times),
        "tokens": tokens,
        "megabytes": sum(len(line.encode()) for line in lines) / 1e6,
    }


class TextServing(tf.Module):
    """Text in → logits: the classifier's preprocessor and the classifier in one tf.function."""

    def __init__(self, classifier):
        super().__init__()
        self.classifier = classifier

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def serve(self, text):
        return {"logits": self.classifier(self.classifier.preprocessor(text), training=False)}


def serving(spec, mode):
    """In process; "savedmodel" first exports TextServing (errors recorded) and serves the loaded copy."""
    data = common.load_json(spec["data"])
    module = TextServing(text_classifier(spec["preset"], data["vocab"]))
    with tempfile.TemporaryDirectory(prefix="kerashub_serving_") as path:
        serve = module.serve
        if mode == "savedmodel":
            tf.saved_model.save(module, path, signatures={"serving_default": module.serve})
            serve = tf.saved_model.load(path).signatures["serving_default"]
        result = common.serving_latency(
            lambda: lambda texts: serve(text=tf.constant(texts))["logits"].numpy(), data["sample"], spec
        )
    return {**result, "sequence_length": module.classifier.preprocessor.sequence_length}


def setup(spec):
    """Single-threaded TensorFlow for the tokenization benchmark; TF's defaults (all cores) otherwise.
    bfloat16 precision: Keras' "mixed_bfloat16" policy; a GPU case fails unless TensorFlow sees a GPU."""
    if spec["bench"] == "tokenize":
        tf.config.threading.set_inter_op_parallelism_threads(1)
        tf.config.threading.set_intra_op_parallelism_threads(1)
    if spec.get("precision") == "bfloat16":
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
    if common.on_gpu(spec) and not tf.config.list_physical_devices("GPU"):
        raise RuntimeError("--device gpu, but TensorFlow sees no GPU")


def versions():
    try:  # the text benchmarks need it; a GPU machine's model benchmarks run without it
        import tensorflow_text
    except ImportError:
        tensorflow_text = None
    return {
        "python": sys.version.split()[0],
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
        "keras_hub": keras_hub.__version__,
        "tensorflow_text": tensorflow_text.__version__ if tensorflow_text else None,
        "keras_backend": keras.backend.backend(),
        "TF_ENABLE_ONEDNN_OPTS": os.environ.get("TF_ENABLE_ONEDNN_OPTS"),  # unset: TensorFlow's default,
        "onednn_enabled": _pywrap_util_port.IsMklEnabled(),
    }  # ... which is on with AVX-512


if __name__ == "__main__":
    common.run(
        {"forward": forward, "pretrain": pretrain, "finetune": finetune, "tokenize": tokenize, "serving": serving},
        versions,
        setup,
    )
