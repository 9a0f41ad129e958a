"""The name table: every weight of our encoder and pretraining heads, described by the original TF1 variable
name(s) it comes from (`bert/encoder/layer_0/attention/self/query/kernel`, ...).

Hugging Face names are derived from those (`encoder.layer.0.attention.self.query.weight`, transposed), so both
formats go through the same assembly (`weights.assign_weights`), and `weights.hf_tensors` reads the table
backwards to export (`export.hf`).
"""

from __future__ import annotations

import re

import numpy as np

from keras_bert_lite.config import BertConfig

# Variables that are not model weights: optimizer slots and step counters of released TF1 checkpoints, and
# Hugging Face buffers / duplicated tied tensors.
IGNORED_TF1 = re.compile(
    r"(^|/)(global_step|adam_[mv]|Adam(_\d+)?|Momentum|beta[12]_power|bad_steps|loss_scale"
    r"|good_steps|current_loss_scale)($|/)"
)
IGNORED_HF = {"embeddings.position_ids", "cls.predictions.decoder.weight", "cls.predictions.decoder.bias"}
HEAD_PREFIXES = ("cls/predictions/", "cls/seq_relationship/")
# The fine-tuning heads of Hugging Face's BertFor{SequenceClassification,MultipleChoice,TokenClassification}
# ("classifier") and BertForQuestionAnswering ("qa_outputs"): skipped by the encoder, written by export.hf.
HF_TASK_HEADS = ("classifier", "qa_outputs")
# The fine-tuning heads of google-research/bert's run_classifier.py and run_squad.py: skipped as well.
TF1_TASK_HEADS = ("output_weights", "output_bias", "cls/squad/output_weights", "cls/squad/output_bias")
POOLER = ("bert/pooler/dense/kernel", "bert/pooler/dense/bias")
# Parts a checkpoint may lack entirely, which `load(..., part="pretrainer", new_heads=True)` starts from scratch
# (TF1 name prefixes).
FRESH_PARTS = {
    "bert/pooler/": "pooler",
    "cls/predictions/": "masked-LM head",
    "cls/seq_relationship/": "next-sentence head",
}
# Hugging Face's MLM decoder and what keras_bert_lite's MLM head ties it to (HF files hold both, or only the latter).
TIED_DECODER = {
    "cls.predictions.decoder.weight": "embeddings.word_embeddings.weight",
    "cls.predictions.decoder.bias": "cls.predictions.bias",
}


class CheckpointMismatchError(ValueError):
    """The checkpoint and the model do not match one to one; the message lists every difference."""


def weight_sources(config: BertConfig, heads: bool) -> dict[str, list[str]]:
    """Our weight path -> the original TF1 variable names it is assembled from (in TF1 layout)."""
    table = {
        "embeddings/word_embeddings": ["bert/embeddings/word_embeddings"],
        "embeddings/position_embeddings": ["bert/embeddings/position_embeddings"],
        "embeddings/token_type_embeddings": ["bert/embeddings/token_type_embeddings"],
        "embeddings/layer_norm/gamma": ["bert/embeddings/LayerNorm/gamma"],
        "embeddings/layer_norm/beta": ["bert/embeddings/LayerNorm/beta"],
    }
    for i in range(config.num_layers):
        ours, theirs = f"layer_{i}", f"bert/encoder/layer_{i}"
        for kind in ("kernel", "bias"):
            # Fused [H, 3H] projection = query | key | value along the output axis.
            table[f"{ours}/attention/qkv_{kind}"] = [
                f"{theirs}/attention/self/{p}/{kind}" for p in ("query", "key", "value")
            ]
            table[f"{ours}/attention/output_{kind}"] = [f"{theirs}/attention/output/dense/{kind}"]
            table[f"{ours}/intermediate/{kind}"] = [f"{theirs}/intermediate/dense/{kind}"]
            table[f"{ours}/output/{kind}"] = [f"{theirs}/output/dense/{kind}"]
        for ln_ours, ln_theirs in (
            ("attention_layer_norm", "attention/output/LayerNorm"),
            ("output_layer_norm", "output/LayerNorm"),
        ):
            table[f"{ours}/{ln_ours}/gamma"] = [f"{theirs}/{ln_theirs}/gamma"]
            table[f"{ours}/{ln_ours}/beta"] = [f"{theirs}/{ln_theirs}/beta"]
    table["pooler/dense/kernel"] = ["bert/pooler/dense/kernel"]
    table["pooler/dense/bias"] = ["bert/pooler/dense/bias"]
    if heads:
        table.update(
            {
                "masked_lm/transform/kernel": ["cls/predictions/transform/dense/kernel"],
                "masked_lm/transform/bias": ["cls/predictions/transform/dense/bias"],
                "masked_lm/layer_norm/gamma": ["cls/predictions/transform/LayerNorm/gamma"],
                "masked_lm/layer_norm/beta": ["cls/predictions/transform/LayerNorm/beta"],
                "masked_lm/output_bias": ["cls/predictions/output_bias"],
                # TF1 stores the NSP weights as [2, H]; our Dense kernel is [H, 2] (see assemble).
                "next_sentence/dense/kernel": ["cls/seq_relationship/output_weights"],
                "next_sentence/dense/bias": ["cls/seq_relationship/output_bias"],
            }
        )
    return table


def assemble(path: str, arrays: list[np.ndarray]) -> np.ndarray:
    """Our weight `path` from its TF1 arrays: the fused query | key | value projection concatenated along the
    output axis ([H, 3H], [3H]), the next-sentence kernel transposed ([2, H] -> [H, 2]), others as they are."""
    if path == "next_sentence/dense/kernel":
        return arrays[0].T
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays, axis=-1)


def disassemble(path: str, value: np.ndarray, count: int) -> list[np.ndarray]:
    """The inverse of `assemble`: our weight -> its `count` TF1 arrays."""
    if path == "next_sentence/dense/kernel":
        return [value.T]
    return [value] if count == 1 else np.split(value, count, axis=-1)


def hf_candidates(tf1_name: str) -> tuple[list[str], bool]:
    """Hugging Face key candidates for a TF1 variable name, and whether HF stores it transposed."""
    name = tf1_name
    name = re.sub(r"layer_(\d+)", r"layer.\1", name).replace("/", ".")
    transpose = False
    if name.endswith(".kernel"):
        name, transpose = name[: -len(".kernel")] + ".weight", True  # torch Linear: [out, in]
    elif name.endswith("_embeddings"):
        name += ".weight"
    elif name == "cls.predictions.output_bias":
        name = "cls.predictions.bias"
    elif name.startswith("cls.seq_relationship.output_"):
        name = name.replace("output_weights", "weight").replace("output_bias", "bias")  # [2, H] like TF1
    names = [name]
    if name.endswith(".gamma") or name.endswith(".beta"):  # older HF files kept gamma/beta
        names.insert(0, name.replace(".gamma", ".weight").replace(".beta", ".bias"))
    if name.startswith("bert."):  # BertModel files have no "bert." prefix
        names += [n[len("bert.") :] for n in list(names)]
    return names, transpose


def hf_name(tf1_name: str, bert_prefix: bool) -> tuple[str, bool]:
    """The Hugging Face key today's transformers writes for a TF1 variable name (`LayerNorm.weight`, not
    `gamma`; `bert.` prefixed in models with heads), and whether it is stored transposed."""
    candidates, transpose = hf_candidates(tf1_name)
    name = candidates[0]
    if not bert_prefix and name.startswith("bert."):
        name = name[len("bert.") :]
    return name, transpose
