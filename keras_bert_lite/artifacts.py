"""Run directories: the one place that knows what a run writes, where, and how another tool finds it.

A pretraining run (`kbl-pretrain --model_dir D`) leaves:

    D/pretrainer.keras   encoder + MLM/NSP heads (continue pretraining from D)
    D/encoder.keras      the encoder alone (fine-tune from D)
    D/vocab.txt, D/tokenizer_config.json   the vocabulary and its casing
    D/flags.json, D/model_config.json      the settings and architecture a resumed run must match
    D/inputs.json                          digests of the files it read, which a resumed run must find unchanged
    D/checkpoints/, D/train/               resume checkpoints, TensorBoard
    D/run.lock                             held while a command runs there (`runners.run_lock`)

A fine-tuning run (`kbl-glue/ner/squad/swag --model_dir D`) leaves:

    D/model.keras        the task model of the best dev epoch
    D/task.json          its `TaskSpec`: what the exporter needs to serve it
    D/vocab.txt, D/tokenizer_config.json, D/flags.json, D/model_config.json, D/inputs.json, D/checkpoints/
    D/metrics.json, D/*predictions*, D/logs/

Every tool takes either such a directory or a file of it where it takes a model (`keras_file_of`,
`require_keras_file`), and finds the vocabulary beside it (`vocab_given_or_beside`). Which `.keras` file of a run
a loader reads is `model_files`' one order (`kbl.load` reads it). Nothing else in the package spells these file
names.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os

import keras

from keras_bert_lite.data.long_texts import stride_problem
from keras_bert_lite.data.windows import POOLING
from keras_bert_lite.hf_hub import resolve_model
from keras_bert_lite.text.vocab import Vocab, table_mismatch
from keras_bert_lite.utils.deprecation import renamed_attributes
from keras_bert_lite.utils.files import atomic_write_text

PRETRAINER_FILE = "pretrainer.keras"
ENCODER_FILE = "encoder.keras"
TASK_MODEL_FILE = "model.keras"
VOCAB_FILES = ("vocab.txt", "tokenizer.json")  # looked for in this order beside a model
TASK_SPEC_FILE = "task.json"
FLAGS_FILE = "flags.json"
MODEL_CONFIG_FILE = "model_config.json"
INPUTS_FILE = "inputs.json"
RUN_LOCK_FILE = "run.lock"
METRICS_FILE = "metrics.json"
CHECKPOINTS_DIR = "checkpoints"
MODEL_FILES = {"encoder": ENCODER_FILE, "pretrainer": PRETRAINER_FILE, "task": TASK_MODEL_FILE}  # part -> its file

DEFAULT_MAX_ANSWER_LENGTH = 30  # tokens, as google-research/bert's run_squad.py
DEFAULT_TOP_K = 5  # tokens per mask, as Hugging Face's fill-mask pipeline
DEFAULT_THRESHOLD = 0.5  # multi-label: a label is predicted when its probability exceeds it
TASK_TYPES = (
    "classification",
    "regression",
    "token_classification",
    "span",
    "multiple_choice",
    "encoder",
    "embedding",
    "fill_mask",
    "multi_label",
)
LABELED_TASKS = ("classification", "token_classification", "multi_label")  # task types with label names
WINDOWED_TASKS = ("classification", "regression", "multi_label", "token_classification")  # may read in windows


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What a fine-tuned model does: the serving-relevant facts, saved as `task.json` beside `model.keras`.

    Attributes:
        task_type: one of TASK_TYPES.
        lower_case: whether the vocabulary is uncased.
        seq_length: the sequence length the model was trained with (exports pad to it; "embedding": the longest
            input, as sentence-transformers' max_seq_length).
        labels: label names in id order (classification, multi_label and token classification).
        text_fields: ["text"] or ["text", "text_b"] (sentence pairs; question + context for "span").
        num_choices: choices per example (multiple choice).
        max_query_length: question tokens kept (span; 0: what the context leaves), as the run kept them.
        max_answer_length: the longest answer in tokens (span; 0: `DEFAULT_MAX_ANSWER_LENGTH`), as the run's.
        top_k: tokens per mask (fill_mask, a pretrainer's masked-LM head; 0: `DEFAULT_TOP_K`).
        threshold: multi_label: a label is predicted when its probability (sigmoid) exceeds it, in (0, 1) (0:
            `DEFAULT_THRESHOLD`).
        doc_stride: texts longer than seq_length (`WINDOWED_TASKS`): 0: cut; N: read whole, in windows of seq_length
            every N tokens (`data.long_texts`), as the run read them.
        window_pooling: how a text's windows' logits combine (doc_stride set; not token classification, whose
            tokens each take their max-context window's): "mean" or "max" ("": "mean").
    """

    task_type: str
    lower_case: bool
    seq_length: int
    labels: tuple[str, ...] = ()
    text_fields: tuple[str, ...] = ("text",)
    num_choices: int = 0
    max_query_length: int = 0
    max_answer_length: int = 0
    top_k: int = 0
    threshold: float = 0.0
    doc_stride: int = 0
    window_pooling: str = ""

    def __post_init__(self):
        if self.task_type not in TASK_TYPES:
            raise ValueError(f"task_type {self.task_type!r} is not one of {TASK_TYPES}.")
        if self.task_type in LABELED_TASKS and not self.labels:
            raise ValueError(f"A {self.task_type} task needs its label names (`labels`).")
        if tuple(self.text_fields) not in (("text",), ("text", "text_b")):
            raise ValueError(f"text_fields must be ['text'] or ['text', 'text_b'], got {list(self.text_fields)}.")
        if self.task_type == "embedding" and (len(self.text_fields) != 1 or self.labels):
            raise ValueError(
                "An embedding model takes one text and has no labels: a vector per text (embed each "
                "text of a pair on its own)."
            )
        if self.task_type == "span" and len(self.text_fields) != 2:
            raise ValueError("A span (question answering) task takes two texts: text (question), text_b (context).")
        if (self.max_query_length or self.max_answer_length) and self.task_type != "span":
            raise ValueError("max_query_length and max_answer_length are settings of span tasks.")
        if min(self.max_query_length, self.max_answer_length) < 0:
            raise ValueError("max_query_length and max_answer_length must be >= 0 (0: the default).")
        if self.task_type == "fill_mask" and (len(self.text_fields) != 1 or self.labels):
            raise ValueError("A fill_mask model takes one text (with [MASK] in it) and has no labels.")
        if (self.top_k and self.task_type != "fill_mask") or self.top_k < 0:
            raise ValueError(f"top_k {self.top_k}: a setting of fill_mask tasks, >= 1 (0: {DEFAULT_TOP_K}).")
        if (self.threshold and self.task_type != "multi_label") or not 0 <= self.threshold < 1:
            raise ValueError(
                f"threshold {self.threshold}: a setting of multi_label tasks, in (0, 1) (0: {DEFAULT_THRESHOLD})."
            )
        self._check_windows()
        object.__setattr__(self, "labels", tuple(self.labels))
        object.__setattr__(self, "text_fields", tuple(self.text_fields))

    def _check_windows(self) -> None:
        """Refuses window settings of a task type without windows, a stride `data.long_texts` cannot window with,
        and an unknown pooling."""
        if self.doc_stride and self.task_type not in WINDOWED_TASKS:
            raise ValueError(f"doc_stride {self.doc_stride}: a setting of {', '.join(WINDOWED_TASKS)} tasks.")
        problem = (
            stride_problem(self.seq_length, self.doc_stride, self.is_pair, ("doc_stride", "seq_length"))
            if self.doc_stride
            else ""
        )
        if problem or self.doc_stride < 0:
            raise ValueError(problem or f"doc_stride must be >= 0 (0: texts are cut), got {self.doc_stride}.")
        if self.window_pooling and (
            self.window_pooling not in POOLING or not self.doc_stride or self.task_type == "token_classification"
        ):
            raise ValueError(
                f"window_pooling {self.window_pooling!r}: one of {', '.join(POOLING)}, for the windows "
                "(doc_stride) of a task with one output per text."
            )

    @property
    def is_pair(self) -> bool:
        return len(self.text_fields) == 2

    def save(self, path: str) -> None:
        """Writes the spec as JSON (`task.json`; fields at their empty default left out), atomically."""
        values = {k: v for k, v in dataclasses.asdict(self).items() if v or k in ("task_type", "lower_case")}
        atomic_write_text(path, json.dumps(values, indent=2) + "\n")

    @classmethod
    def load(cls, path: str) -> TaskSpec:
        """Reads a `task.json`; unknown or missing fields are errors naming the file."""
        with open(path, encoding="utf-8") as f:
            values = json.load(f)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"{path}: unknown field(s) {unknown}; known: {sorted(known)}.")
        missing = sorted({"task_type", "lower_case", "seq_length"} - set(values))
        if missing:
            raise ValueError(f"{path}: missing field(s) {missing}.")
        try:
            return cls(**values)
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None

    @classmethod
    def from_model_dir(cls, model_dir: str) -> TaskSpec:
        return cls.load(os.path.join(model_dir, TASK_SPEC_FILE))


def run_dir_of(path: str) -> str:
    """The directory of a run given as the directory itself or as one of its files."""
    return path if os.path.isdir(path) else (os.path.dirname(path) or ".")


def keras_file_of(path: str, prefer: tuple[str, ...]) -> str | None:
    """The `.keras` file a model argument means: `path` itself if it is one, else the first of `prefer` in the
    run directory `path`; None when `path` is no run directory of ours (a Hugging Face or TF1 checkpoint)."""
    if path.endswith(".keras"):
        return path
    if os.path.isdir(path):
        for name in prefer:
            if os.path.exists(os.path.join(path, name)):
                return os.path.join(path, name)
    return None


def model_files(part: str) -> tuple[str, ...]:
    """The `.keras` files of a run directory a loader looks for to get `part`, in order: the part's own file
    (`MODEL_FILES`), then the others in the order encoder.keras, pretrainer.keras, model.keras (a pretraining
    run's files before a fine-tuned model's).

    Args:
        part: "encoder", "pretrainer" or "task".

    Raises:
        ValueError: an unknown part.
    """
    if part not in MODEL_FILES:
        raise ValueError(f"part {part!r}: one of {', '.join(MODEL_FILES)}.")
    return (MODEL_FILES[part], *(name for name in MODEL_FILES.values() if name != MODEL_FILES[part]))


def require_keras_file(path: str, prefer: tuple[str, ...] = model_files("task")) -> str:
    """`keras_file_of`, for callers that read only our own files: the file must exist.

    Raises:
        FileNotFoundError: `path` is no `.keras` file and no run directory with one of `prefer` in it; the message
            names what was looked for.
    """
    found = keras_file_of(path, prefer)
    if found is None or not os.path.isfile(found):
        raise FileNotFoundError(f"{path}: no .keras file, and no run directory with {' or '.join(prefer)} in it.")
    return found


def vocab_given_or_beside(vocab: str, init: str, init_flag: str = "--init") -> str:
    """The vocabulary of a run: `--vocab` if given, else the one beside `--init` (any checkpoint format, also a
    Hugging Face model name or a `.zip` archive: `hf_hub.resolve_model`); `init_flag`: how the command calls
    `--init`, for the message.

    Raises:
        FileNotFoundError: neither is there; the message says how to make or pass one.
    """
    if vocab:
        if not os.path.exists(vocab):
            raise FileNotFoundError(f"--vocab {vocab}: no such file.")
        return vocab
    found = vocab_beside(init) if init else None
    if found:
        return found
    raise FileNotFoundError(
        f"--vocab is required: no vocab.txt or tokenizer.json beside {init_flag}. Build one with "
        "kbl-vocab, or pass the one the model was trained with."
    )


def vocab_beside(model: str) -> str | None:
    """The vocabulary file (`VOCAB_FILES`) beside a model given in any checkpoint format (also a Hugging Face
    model name or a `.zip` archive: `hf_hub.resolve_model`); None when there is none."""
    model = resolve_model(model)
    base = run_dir_of(model) if os.path.exists(model) else os.path.dirname(model)  # a TF1 prefix has no file
    return next((os.path.join(base, n) for n in VOCAB_FILES if os.path.exists(os.path.join(base, n))), None)


def vocab_for(model_or_path, vocab: Vocab | str | None, table_rows: int) -> Vocab:
    """A model's vocabulary for the Python API: `vocab` (a `Vocab` or a vocab.txt / tokenizer.json path), else the
    one beside `model_or_path` when it is a path (`vocab_beside`), not a model object.

    Args:
        model_or_path: a keras.Model, or the path or Hub name it was loaded from.
        vocab: the caller's vocabulary, or None.
        table_rows: the rows of the model's token embedding table, which the vocabulary must fit.

    Raises:
        ValueError: no vocabulary given or beside the model, or one that does not fit the table.
    """
    is_path = not isinstance(model_or_path, keras.Model)
    vocab = vocab if vocab is not None or not is_path else vocab_beside(model_or_path)
    if vocab is None:
        where = f"{model_or_path}: no vocab.txt or tokenizer.json beside it" if is_path else "a model object"
        raise ValueError(f"{where}; pass vocab= (the vocabulary the model was trained with).")
    vocab = vocab if isinstance(vocab, Vocab) else Vocab.from_file(vocab)
    mismatch = table_mismatch(table_rows, vocab)
    if mismatch:
        raise ValueError(f"{mismatch[0].upper()}{mismatch[1:]}: pass the vocabulary the model was trained with.")
    return vocab


def _moved_loaders(name):
    """`load_trained` and `load_keras_file`, now in `checkpoints` (they load through `kbl.load`, which reads this
    module's layout), imported on first use; kept here for code that calls them as `artifacts.<name>`."""
    if name in ("load_trained", "load_keras_file"):
        return getattr(importlib.import_module("keras_bert_lite.checkpoints"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Former names, for one release.
__getattr__ = renamed_attributes(
    __name__,
    {"init_vocab": "vocab_given_or_beside", "model_file": "keras_file_of", "existing_model_file": "require_keras_file"},
    otherwise=_moved_loaders,
)
