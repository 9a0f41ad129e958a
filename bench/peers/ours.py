"""keras_bert_lite's side of `bench/compare_peers.py`: `python bench/peers/ours.py SPEC.json OUT.json`.

Imports the package from this checkout (not whatever the venv has installed). Modes: "graph" (tf.function /
`compile(jit_compile=False)`) and "xla" (`jit_compile=True`) for the model benchmarks; tokenize: "default"
(the default BertTokenizer variant); serving: "savedmodel" (the exported text-in `serving_default`) and "bare"
(the classifier on inputs packed beforehand, to isolate the cost of in-graph tokenisation). Each result also
names `library_default`: the mode a user gets without asking (see `library_default`). keras_bert_lite is
imported before TensorFlow, as the package's own tools do, so TensorFlow's oneDNN kernels are on
(keras_bert_lite/_cpu_kernels.py); KerasHub's runner gets TensorFlow's default.
"""

import os
import pathlib
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import common  # noqa: E402

import keras_bert_lite as kbl  # noqa: E402  (first, as our tools do: it turns TensorFlow's oneDNN kernels on)

# isort: split
import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_bert_lite.artifacts import TaskSpec  # noqa: E402
from keras_bert_lite.data.sentences import SentenceData  # noqa: E402
from keras_bert_lite.export.exporter import export_saved_model  # noqa: E402
from keras_bert_lite.runners.tasks.sentence import SentenceTask  # noqa: E402
from keras_bert_lite.text import BertPacker, BertTokenizer, Vocab  # noqa: E402
from keras_bert_lite.training.optimization import create_optimizer  # noqa: E402
from keras_bert_lite.utils import tf_internals  # noqa: E402
from keras_bert_lite.xla import use_xla  # noqa: E402

JIT = {"graph": False, "xla": True}


def library_default(model=None) -> str:
    """The mode the library runs in when the user does not choose: for a compiled `model`, Keras' resolved
    `jit_compile` (what `fit` uses; kbl-glue and kbl-pretrain choose alike); without one, `inference_function`'s
    (`keras_bert_lite.xla.use_xla`). Both mean graph mode on CPU-only machines and XLA where TensorFlow sees a
    GPU. This is the one place "ours (default)" comes from.
    """
    jit = use_xla() if model is None else model.jit_compile
    return "xla" if jit else "graph"


def config(preset: str, **overrides):
    return kbl.BertConfig.of_size(preset, **overrides)


def tensors(batch: dict) -> dict:
    return {name: tf.constant(value) for name, value in batch.items()}


def forward(spec, mode):
    encoder = kbl.build_encoder(config(spec["preset"]))
    b = tensors(common.synthetic_batch(spec["batch"], spec["seq"]))
    inputs = {"input_word_ids": b["word_ids"], "input_mask": b["mask"], "input_type_ids": b["type_ids"]}
    # The library's inference entry point: the batch split across the cores (kbl.inference_function).
    run = kbl.inference_function(encoder, outputs="sequence_output", jit_compile=JIT[mode])
    times = common.time_spec(lambda: run(inputs), spec, common.tf_sync(spec))  # the framework tensor, as HF
    return {**common.median_rate(spec["batch"], times), "library_default": library_default()}


def pretrain(spec, mode):
    """One `train_on_batch` of MLM (at the masked positions) + NSP with the library's AdamW (BERT recipe)."""
    b = tensors(common.synthetic_batch(spec["batch"], spec["seq"], spec["predictions"]))
    x = {
        "input_word_ids": b["word_ids"],
        "input_mask": b["mask"],
        "input_type_ids": b["type_ids"],
        "masked_lm_positions": b["positions"],
    }
    y = {
        "masked_lm_ids": b["ids"],
        "masked_lm_weights": tf.ones_like(b["ids"], tf.float32),
        "next_sentence_labels": b["nsp"],
    }
    model = kbl.build_pretrainer(config(spec["preset"]))
    default = compile_default_then(
        model, mode, lambda: create_optimizer(learning_rate=1e-4, total_steps=10_000, warmup_steps=100)
    )
    times = common.time_spec(lambda: model.train_on_batch(x, y), spec, common.tf_sync(spec))
    return {**common.median_rate(spec["batch"], times), "library_default": default}


def compile_default_then(model, mode, optimizer, **compile_args) -> str:
    """Compiles `model` as a user would (no jit_compile), notes `library_default`, recompiles it in `mode`.

    Returns the library's default mode.
    """
    model.compile(optimizer=optimizer(), **compile_args)
    default = library_default(model)
    model.compile(optimizer=optimizer(), jit_compile=JIT[mode], **compile_args)
    return default


def finetune_dataset(texts, labels, vocab, batch):
    """kbl-glue's training pipeline itself (`SentenceTask.train_dataset`): tokenise once, then shuffled batches
    grouped by length, each padded to its longest, rounded up to 8."""
    tokenizer, packer = BertTokenizer(vocab, lower_case=True), BertPacker(128, vocab=vocab, dynamic=True)
    data = SentenceData(
        text_a=texts, text_b=None, labels=labels, ids=list(range(len(texts))), lines=None, source="compare_peers sample"
    )
    task = SentenceTask(
        tokenizer,
        packer,
        train=data,
        train_targets=labels,
        devs={},
        tests={},
        label_names=("0", "1"),
        metrics=("accuracy",),
    )
    return task.train_dataset(batch, seed=0)


def finetune(spec, mode):
    """`fit` of a classifier on real sentences; the first epoch(s) warm up (trace/compile every padded length)."""
    data = common.load_json(spec["data"])
    count = spec["batch"] * spec["finetune_batches"]
    texts, labels = data["sample"][:count], data["labels"][:count]
    vocab = Vocab.from_file(data["vocab"])
    start = time.perf_counter()
    dataset = finetune_dataset(texts, labels, vocab, spec["batch"])
    tokenize_s = time.perf_counter() - start  # once per run (tf.function trace included), not per epoch
    model = kbl.build_classifier(config(spec["preset"], vocab_size=len(vocab)), num_classes=2)
    default = compile_default_then(
        model,
        mode,
        lambda: create_optimizer(learning_rate=2e-5, total_steps=10_000, warmup_steps=100),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    timer = common.epoch_timer()
    # As kbl-glue fits (training/finetune.py): one endless iterator, one pass per epoch.
    steps = -(-count // spec["batch"])
    model.fit(dataset, epochs=spec["warmup_epochs"] + spec["runs"], steps_per_epoch=steps, verbose=0, callbacks=[timer])
    lengths = [int(x["input_word_ids"].shape[1]) for x, _ in dataset.take(steps)]
    warmup = spec["warmup_epochs"]
    return {
        **common.median_rate(count, timer.times[warmup:]),
        "warmup_s": sum(timer.times[:warmup]),
        "tokenize_s": tokenize_s,
        "mean_padded_length": sum(lengths) / len(lengths),
        "library_default": default,
    }


def tokenize(spec, mode):
    """Ids only, no special tokens, batches of 1024 lines, in a tf.function; one thread (see `setup`)."""
    data = common.load_json(spec["data"])
    tokenizer = BertTokenizer(Vocab.from_file(data["vocab"]), lower_case=True, variant=mode)
    run = tf.function(
        lambda text: tokenizer.tokenize(text).flat_values, input_signature=[tf.TensorSpec([None], tf.string)]
    )
    lines = data["sentences"]
    batches = [tf.constant(lines[i : i + 1024]) for i in range(0, len(lines), 1024)]
    tokens = sum(int(run(b).shape[0]) for b in batches)
    times = common.time_calls(lambda: [run(b).numpy() for b in batches], spec["runs"], spec["warmup"])
    return {
        **common.median_rate(len(lines), times),
        "tokens": tokens,
        "megabytes": sum(len(line.encode()) for line in lines) / 1e6,
    }


def serving(spec, mode):
    """Text in → logits for a randomly initialised classifier, in process (see common.serving_latency).

    Modes: "savedmodel" (the exported text-in serving_default), "bare" (the classifier on pre-packed ids) and
    "paired" (both, call by call in alternation: the tokenisation overhead, see common.paired_latency).
    """
    data = common.load_json(spec["data"])
    vocab = Vocab.from_file(data["vocab"])
    model = kbl.build_classifier(config(spec["preset"], vocab_size=len(vocab)), num_classes=2)
    if mode == "bare":
        call, prepare = bare_classifier(model, vocab)
        return common.serving_latency(lambda: call, data["sample"], spec, prepare=prepare)
    task = TaskSpec("classification", lower_case=True, seq_length=128, labels=("negative", "positive"))
    with tempfile.TemporaryDirectory(prefix="kbl_serving_") as base_path:
        path = export_saved_model(model, task, vocab, base_path)
        import tensorflow_text  # noqa: F401  (the default tokenizer variant's ops)

        serve = tf.saved_model.load(path).signatures["serving_default"]
        if mode == "savedmodel":
            return common.serving_latency(lambda: text_in_call(serve), data["sample"], spec)
        return tokenisation_overhead(model, vocab, serve, data["sample"], spec)


def text_in_call(serve):
    """call(list of texts) -> logits through a loaded text-in `serving_default` signature."""
    return lambda texts: serve(text=tf.constant(texts))["logits"].numpy()


def tokenisation_overhead(model, vocab, serve, texts, spec) -> dict:
    """`common.paired_latency` of the text-in SavedModel ("savedmodel") against `bare_classifier` ("bare"):
    what in-graph tokenisation costs per call, at one sentence and at `spec["batch"]`."""
    return common.paired_latency(
        {"savedmodel": (text_in_call(serve), None), "bare": bare_classifier(model, vocab)}, texts, spec
    )


def bare_classifier(model, vocab) -> tuple:
    """(call(packed inputs) -> logits, prepare(texts) -> packed inputs): the classifier without the
    in-graph tokenisation, inputs tokenised and packed before timing."""
    tokenizer, packer = BertTokenizer(vocab, lower_case=True), BertPacker(128, vocab=vocab, dynamic=True)
    signature = {name: tf.TensorSpec([None, None], tf.int32) for name in kbl.models.INPUT_NAMES}
    bare = tf.function(lambda inputs: model(inputs, training=False), input_signature=[signature])
    return (lambda inputs: bare(inputs).numpy()), (lambda texts: packer(tokenizer.tokenize(tf.constant(texts))))


def peak(spec, mode):
    """tf.matmul of two n x n matrices (`common.peak_size`, in the spec's precision), FLOP/s at the median time."""
    n = common.peak_size(spec)
    dtype = tf.bfloat16 if spec.get("precision") == "bfloat16" else tf.float32
    a, b = tf.random.normal((n, n), dtype=dtype), tf.random.normal((n, n), dtype=dtype)
    run = tf.function(lambda: tf.matmul(a, b))
    times = common.time_spec(run, spec, common.tf_sync(spec))  # the framework tensor, as HF: common.time_calls
    return common.median_rate(2 * n**3, times)


def setup(spec):
    """Single-threaded TensorFlow for the tokenization benchmark; TF's defaults (all cores) otherwise.

    bfloat16 precision: Keras' "mixed_bfloat16" policy (float32 weights, bf16 compute). On a GPU case, fails
    unless TensorFlow sees a GPU (rather than timing the CPU under a GPU label).
    """
    if spec["bench"] == "tokenize":
        tf.config.threading.set_inter_op_parallelism_threads(1)
        tf.config.threading.set_intra_op_parallelism_threads(1)
    if spec.get("precision") == "bfloat16":
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
    if common.on_gpu(spec):
        gpus = tf.config.list_physical_devices("GPU")
        if not gpus:
            raise RuntimeError(
                "--device gpu, but TensorFlow sees no GPU (see the log for the CUDA libraries it could not load)"
            )
        return {"gpu": tf.config.experimental.get_device_details(gpus[0]).get("device_name")}
    return {}


def versions():
    return {
        "python": sys.version.split()[0],
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
        "keras_bert_lite": kbl.__version__,
        "keras_bert_lite_path": kbl.__file__,
        "TF_ENABLE_ONEDNN_OPTS": os.environ.get("TF_ENABLE_ONEDNN_OPTS"),
        "onednn_enabled": tf_internals.onednn_enabled(),
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
