"""Export to Hugging Face transformers: a model trained or fine-tuned here as a directory that
`transformers.AutoModel*.from_pretrained(directory)` and `AutoTokenizer.from_pretrained(directory)` load.

    import keras_bert_lite as kbl
    kbl.export_hf("runs/sst2", "hf/sst2")                  # a run directory: vocab, casing, labels from beside it
    kbl.export_hf(model, "hf/my-bert", vocab="vocab.txt")  # an in-memory model
    kbl-export --model runs/sst2 --model_base_path hf/sst2 --target hf
    kbl-export --model runs/embedder --model_base_path hf/embedder --target hf  # loads in sentence-transformers

Writes, as transformers' `save_pretrained` does:
  * `config.json`: the HF BertConfig dialect (`config.BertConfig.to_reference_dict("hf")`: our "gelu" is HF's
    exact "gelu", our "gelu_approx" HF's tanh form), `architectures`, and for heads `id2label`/`label2id`
    (`problem_type` "regression", "single_label_classification" or, for a multi-label run,
    "multi_label_classification": transformers then trains with binary cross-entropy, and the probabilities are
    the sigmoid of the logits);
  * `model.safetensors`: the weights under HF names, from the one name table of `checkpoints` read backwards
    (`checkpoints.hf_tensors`), plus the head (`classifier.*`, `qa_outputs.*`); BertForTokenClassification and
    BertForQuestionAnswering have no pooler, so none is written;
  * `vocab.txt`, `tokenizer_config.json` (`do_lower_case`: the vocabulary's casing) and
    `special_tokens_map.json`;
  * for an embedder, also sentence-transformers' `modules.json`, `1_Pooling/config.json` and
    `sentence_bert_config.json` (`sentence_transformers_files`), so that `SentenceTransformer(directory)` pools,
    normalises and cuts texts as the embedder does. It can express only the last block's token vectors pooled
    (`build_embedder(layers=(-1,))`) with the modes in its order; other embedders are refused.

| keras_bert_lite model                    | transformers class             |
| ---------------------------------------- | ------------------------------ |
| encoder (`build_encoder`)                | BertModel                      |
| BertPretrainer (`build_pretrainer`)      | BertForPreTraining             |
| `build_classifier` (1 output: regression) | BertForSequenceClassification |
| `build_classifier`, task type multi_label | BertForSequenceClassification (multi_label_classification) |
| `build_token_classifier`                 | BertForTokenClassification     |
| `build_span_labeler`                     | BertForQuestionAnswering       |
| `build_multiple_choice`                  | BertForMultipleChoice          |
| `build_embedder`                         | BertModel + sentence-transformers files |

Differences HF users may notice: our span labeler gives padding positions a -1e4 logit, HF's does not (equal on
real tokens); a token classifier or span labeler exported and read back with `kbl.load` gets a fresh pooler.
"""

from __future__ import annotations

import json
import os

import keras
import numpy as np
from safetensors.numpy import save_file

from keras_bert_lite.checkpoints import HF_TASK_HEADS, hf_tensors, load_trained
from keras_bert_lite.models import BertPretrainer
from keras_bert_lite.models.embedder import POOLING, is_embedder, pools_last_block
from keras_bert_lite.models.introspect import encoder_config
from keras_bert_lite.sentence_transformers_files import EmbeddingSettings, write_embedding_settings
from keras_bert_lite.text import Vocab
from keras_bert_lite.text.vocab import SPECIAL_TOKENS, table_mismatch
from keras_bert_lite.utils.files import atomic_path

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
VOCAB_FILE = "vocab.txt"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
SPECIAL_TOKENS_FILE = "special_tokens_map.json"

# Our task type -> (transformers class, name of its head module, whether its encoder keeps the pooler).
ARCHITECTURES = {
    "encoder": ("BertModel", None, True),
    "embedding": ("BertModel", None, True),
    "pretrainer": ("BertForPreTraining", None, True),
    "classification": ("BertForSequenceClassification", HF_TASK_HEADS[0], True),
    "regression": ("BertForSequenceClassification", HF_TASK_HEADS[0], True),
    "multi_label": ("BertForSequenceClassification", HF_TASK_HEADS[0], True),
    "token_classification": ("BertForTokenClassification", HF_TASK_HEADS[0], False),
    "span": ("BertForQuestionAnswering", HF_TASK_HEADS[1], False),
    "multiple_choice": ("BertForMultipleChoice", HF_TASK_HEADS[0], True),
}
PROBLEM_TYPES = {"regression": "regression", "multi_label": "multi_label_classification"}  # else single-label
_SPECIAL_NAMES = ("pad_token", "unk_token", "cls_token", "sep_token", "mask_token")  # SPECIAL_TOKENS' order


def export_hf(
    model,
    directory: str,
    vocab: str | Vocab | None = None,
    *,
    task_type: str | None = None,
    labels=None,
    lower_case: bool | None = None,
    seq_length: int | None = None,
    overwrite: bool = False,
) -> str:
    """Writes `model` as a Hugging Face transformers model directory (see the module docstring).

    Args:
        model: a keras_bert_lite model (encoder, BertPretrainer, classifier, token classifier, span labeler,
            multiple choice), or a run directory / `.keras` file (`checkpoints.load_trained`: `kbl.load` with part
            "task"; its task.json gives task type, labels and casing, its vocab.txt the vocabulary).
        directory: the output directory; written atomically (complete or absent).
        vocab: the vocabulary (path or `Vocab`); default the one beside a run directory. None for an in-memory
            model: weights and config only, no tokenizer files.
        task_type: "regression" or "classification" for a classifier with one output (default: regression, as
            `build_classifier(num_classes=1)`); "multi_label" for a classifier whose outputs are independent
            labels (default: task.json's); otherwise the model's structure decides, and a contradicting value is
            an error.
        labels: label names in id order (classification, multi_label, token classification): `id2label`; default
            task.json's, else LABEL_0, LABEL_1, ...
        lower_case: the vocabulary's casing where nothing beside it records it (a contradicting value is refused).
        seq_length: embedders: the longest input in tokens, sentence_bert_config.json's `max_seq_length` (default:
            task.json's, else the model's positions); ignored for other models.
        overwrite: replace an existing non-empty `directory`.

    Returns:
        `directory`.

    Raises:
        ValueError: the model is none of the above, labels do not match its outputs, the casing is unknown, or
            an embedder sentence-transformers cannot express (see the module docstring) or a seq_length beyond
            its positions.
        FileExistsError: `directory` exists, is not empty, and `overwrite` is False.
    """
    spec = None
    if isinstance(model, (str, os.PathLike)):
        model, spec, beside = load_trained(os.fspath(model))
        vocab = vocab if vocab is not None else beside
        labels = labels if labels is not None else (spec.labels or None if spec else None)
        seq_length = seq_length or (spec.seq_length if spec else None)
        if spec is not None and task_type is None and spec.task_type in ("regression", "classification", "multi_label"):
            task_type = spec.task_type
    kind, encoder, head = _structure(model, task_type)
    architecture, head_name, pooler = ARCHITECTURES[kind]
    config = encoder_config(encoder)
    hf_config = config.to_reference_dict("hf")
    hf_config["architectures"] = [architecture]

    embedding = _embedding_settings(model, seq_length, config) if kind == "embedding" else None
    tensors = hf_tensors(model if kind == "pretrainer" else encoder, bert_prefix=architecture != "BertModel")
    if not pooler:
        tensors = {k: v for k, v in tensors.items() if not k.startswith("bert.pooler.")}
    if head is not None:
        kernel, bias = (keras.ops.convert_to_numpy(w).astype(np.float32) for w in head.dense.weights)
        tensors[f"{head_name}.weight"] = np.ascontiguousarray(kernel.T)  # torch Linear: [out, in]
        tensors[f"{head_name}.bias"] = bias
        hf_config.update(_label_fields(kind, head, labels, getattr(head, "dropout", None)))

    tokenizer_files = {}
    if vocab is not None:
        vocab = vocab if isinstance(vocab, Vocab) else Vocab.from_file(vocab)
        mismatch = table_mismatch(config.vocab_size, vocab)
        if mismatch:
            raise ValueError(f"{mismatch[0].upper()}{mismatch[1:]}: pass the vocabulary the model was trained with.")
        requested = lower_case if lower_case is not None else (spec.lower_case if spec else None)
        tokenizer_files = _tokenizer_files(vocab, vocab.resolve_lower_case(requested), config)

    directory = os.fspath(directory)
    if os.path.isdir(directory) and os.listdir(directory) and not overwrite:
        raise FileExistsError(
            f"{directory} exists and is not empty: choose a new directory or remove it "
            "(export_hf(..., overwrite=True) replaces it)."
        )
    with atomic_path(directory) as tmp:
        os.makedirs(tmp)
        save_file(tensors, os.path.join(tmp, WEIGHTS_FILE), metadata={"format": "pt"})
        _write_json(os.path.join(tmp, CONFIG_FILE), hf_config)
        for name, content in tokenizer_files.items():
            if isinstance(content, str):
                with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                    f.write(content)
            else:
                _write_json(os.path.join(tmp, name), content)
        if embedding is not None:
            write_embedding_settings(tmp, embedding, dimension=config.hidden_size)
    return directory


def _structure(model: keras.Model, task_type: str | None):
    """(our task type, the encoder, the head's LogitsHead or None) of a keras_bert_lite model."""
    if isinstance(model, BertPretrainer):
        return _checked("pretrainer", None if task_type == "fill_mask" else task_type), model.encoder, None
    names = {layer.name for layer in model.layers}
    if {"embeddings", "layer_0"} <= names:
        return _checked("encoder", task_type), model, None
    if is_embedder(model):
        return _checked("embedding", task_type), model.get_layer("encoder"), None
    if "encoder" not in names:
        raise ValueError(
            f"Model {model.name!r} is not a keras_bert_lite model (no 'encoder' layer); export_hf "
            f"takes an encoder, a BertPretrainer or a model of models.tasks."
        )
    encoder = model.get_layer("encoder")
    if "span" in names:
        return _checked("span", task_type), encoder, model.get_layer("span").logits
    if "choice_logits" in names:
        return _checked("multiple_choice", task_type), encoder, model.get_layer("choice_logits").logits
    if "logits" in names:
        head = model.get_layer("logits")
        if len(model.output.shape) == 3:
            return _checked("token_classification", task_type), encoder, head
        if head.num_outputs == 1 and task_type in (None, "regression"):
            return "regression", encoder, head
        if task_type == "multi_label":
            return task_type, encoder, head
        return _checked("classification", task_type), encoder, head
    raise ValueError(f"Model {model.name!r} has no head export_hf knows (logits, span, choice_logits).")


def _embedding_settings(embedder: keras.Model, seq_length: int | None, config) -> EmbeddingSettings:
    """sentence-transformers' settings for `embedder`, cutting texts at `seq_length` tokens (default: all positions).

    Raises:
        ValueError: the embedder pools other blocks than the last alone, or seq_length exceeds the positions.
    """
    if not pools_last_block(embedder):
        raise ValueError(
            "The embedder pools other blocks than the last one alone (build_embedder's `layers`); "
            "sentence-transformers pools the last block's token vectors only. Export it for TF Serving "
            "instead (kbl-export --target tf-serving), or build it with layers=(-1,)."
        )
    seq_length = seq_length or config.max_position_embeddings
    if seq_length > config.max_position_embeddings:
        raise ValueError(
            f"seq_length {seq_length} is longer than the model's {config.max_position_embeddings} "
            "positions (max_position_embeddings)."
        )
    pooling = embedder.get_layer(POOLING)
    return EmbeddingSettings(pooling.modes, pooling.normalize, seq_length)


def _checked(kind: str, task_type: str | None) -> str:
    if task_type not in (None, kind):
        raise ValueError(f"task_type {task_type!r} contradicts the model, which is a {kind} model.")
    return kind


def _label_fields(kind: str, head, labels, dropout) -> dict:
    fields = {}
    if kind in ("classification", "multi_label", "regression", "token_classification"):
        count = head.num_outputs
        if labels is not None and kind != "regression":
            labels = list(labels)
            if len(labels) != count:
                raise ValueError(f"{len(labels)} labels {labels} for a head with {count} outputs.")
        else:
            labels = [f"LABEL_{i}" for i in range(count)]
        fields["id2label"] = {str(i): name for i, name in enumerate(labels)}
        fields["label2id"] = {name: i for i, name in enumerate(labels)}
        if kind != "token_classification":
            fields["problem_type"] = PROBLEM_TYPES.get(kind, "single_label_classification")
    if dropout is not None and kind != "span":
        fields["classifier_dropout"] = dropout
    return fields


def _tokenizer_files(vocab: Vocab, lower_case: bool, config) -> dict:
    special = dict(zip(_SPECIAL_NAMES, SPECIAL_TOKENS))
    tokenizer_config = {
        "tokenizer_class": "BertTokenizer",
        "do_lower_case": lower_case,
        "do_basic_tokenize": True,
        "never_split": None,
        "strip_accents": None,
        "tokenize_chinese_chars": True,
        "model_max_length": config.max_position_embeddings,
        **special,
    }
    return {
        VOCAB_FILE: "".join(t + "\n" for t in vocab.tokens),
        TOKENIZER_CONFIG_FILE: tokenizer_config,
        SPECIAL_TOKENS_FILE: special,
    }


def _write_json(path: str, values: dict) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(values, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
