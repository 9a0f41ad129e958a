"""Generates hf_export.npz: Hugging Face transformers' outputs for keras_bert_lite's Hugging Face exports.

Not a test and not a runtime dependency. Two steps, as `make goldens` runs them:

    .venv/bin/python tests/golden/hf_export_models.py DIR                      # our exports (keras_bert_lite)
    bench/.venvs/goldens/bin/python tests/golden/make_hf_export_goldens.py DIR # their outputs (torch, transformers)

For each export DIR/<name>/ of hf_export_models.MODELS, this script loads it with the Auto class of its
architecture (no key may be missing or unexpected: every parameter of the HF model comes from the file) and
AutoTokenizer, runs it in eval mode on fixed inputs, and stores in hf_export.npz (next to this file):
  * the inputs: `input_word_ids`, `input_mask`, `input_type_ids` `[4, 16]` (and `choice_*` `[2, 3, 16]`),
    `texts` and, per name, `<name>__token_ids` (AutoTokenizer's ids of `texts`, no special tokens);
  * `<name>__<output>`: the model's outputs (`sequence_output`/`pooled_output`, `prediction_logits`/
    `seq_relationship_logits`, `logits`, `start_logits`/`end_logits`);
  * `<name>__config`: the config.json transformers read, and `<name>__tensors`: for each tensor of
    model.safetensors its name, shape and a position-weighted sum (`fingerprint`), so that the tests can check
    that today's export still writes what transformers was given here;
  * for a multi-label classifier (problem_type "multi_label_classification"): `<name>__pipeline_scores`, the
    scores of transformers' text-classification pipeline (top_k=None: every label; its function for that problem
    type, the sigmoid) for `texts`, `[4, labels]` in label id order;
  * for an export with sentence-transformers' files (an embedder): `<name>__sentence_embeddings`,
    `SentenceTransformer(DIR/<name>).encode(texts)` (its own tokenizer, pooling, normalisation and max_seq_length),
    and `<name>__sentence_files`: the contents of those files, as read.

Reference environment as for make_model_goldens.py (torch==2.13.0, transformers==5.23.0) plus
sentence-transformers==6.2.0; the weights are float32 and every output is deterministic to ~1e-7.
"""

import json
import os
import sys

import numpy as np
import sentence_transformers
import torch
import transformers
from safetensors.numpy import load_file

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from hf_export_models import BATCH, CHOICES, MODELS, SEQ, TEXTS, fingerprint  # noqa: E402  (numpy only)

AUTO = {
    "BertModel": transformers.AutoModel,
    "BertForPreTraining": transformers.AutoModelForPreTraining,
    "BertForSequenceClassification": transformers.AutoModelForSequenceClassification,
    "BertForTokenClassification": transformers.AutoModelForTokenClassification,
    "BertForQuestionAnswering": transformers.AutoModelForQuestionAnswering,
    "BertForMultipleChoice": transformers.AutoModelForMultipleChoice,
}
SENTENCE_FILES = ("modules.json", "1_Pooling/config.json", "sentence_bert_config.json")
OUTPUTS = {
    "BertModel": ("last_hidden_state", "sequence_output", "pooler_output", "pooled_output"),
    "BertForPreTraining": (
        "prediction_logits",
        "prediction_logits",
        "seq_relationship_logits",
        "seq_relationship_logits",
    ),
    "BertForSequenceClassification": ("logits", "logits"),
    "BertForTokenClassification": ("logits", "logits"),
    "BertForQuestionAnswering": ("start_logits", "start_logits", "end_logits", "end_logits"),
    "BertForMultipleChoice": ("logits", "logits"),
}


def inputs(rng, batch):
    lengths = np.linspace(SEQ, 5, batch).astype(int)
    mask = (np.arange(SEQ)[None] < lengths[:, None]).astype(np.int32)
    word_ids = rng.integers(5, 120, size=(batch, SEQ)).astype(np.int32)
    word_ids[:, 0] = 2  # [CLS]
    word_ids[np.arange(batch), lengths - 1] = 3  # [SEP]
    word_ids *= mask
    type_ids = ((np.arange(SEQ)[None] >= lengths[:, None] // 2) * mask).astype(np.int32)
    return word_ids, mask, type_ids


def sentence_goldens(name: str, directory: str) -> dict:
    """sentence-transformers' vectors of TEXTS from the export in `directory`, and the files it read."""
    model = sentence_transformers.SentenceTransformer(directory, device="cpu")
    embeddings = model.encode(list(TEXTS), convert_to_numpy=True).astype(np.float32)
    files = {}
    for path in SENTENCE_FILES:
        with open(os.path.join(directory, path), encoding="utf-8") as f:
            files[path] = json.load(f)
    return {
        f"{name}__sentence_embeddings": embeddings,
        f"{name}__sentence_files": np.array(json.dumps(files, sort_keys=True)),
        f"{name}__sentence_max_seq_length": np.array(model.max_seq_length),
    }


def pipeline_scores(directory: str) -> np.ndarray:
    """The text-classification pipeline's score of every label for each of TEXTS, `[texts, labels]` in id order."""
    classify = transformers.pipeline("text-classification", model=directory, top_k=None, device="cpu")
    config = transformers.AutoConfig.from_pretrained(directory)
    names = [config.id2label[i] for i in range(config.num_labels)]
    return np.array(
        [[{r["label"]: r["score"] for r in result}[n] for n in names] for result in classify(list(TEXTS))], np.float32
    )


def main(exports: str) -> None:
    rng = np.random.default_rng(0)
    word_ids, mask, type_ids = inputs(rng, BATCH)
    choices = [x.reshape(2, CHOICES, SEQ) for x in inputs(rng, 2 * CHOICES)]
    golden = {
        "input_word_ids": word_ids,
        "input_mask": mask,
        "input_type_ids": type_ids,
        "choice_word_ids": choices[0],
        "choice_mask": choices[1],
        "choice_type_ids": choices[2],
        "texts": np.array(TEXTS),
        "versions": np.array([f"torch {torch.__version__}", f"transformers {transformers.__version__}"]),
    }
    for name in MODELS:
        directory = os.path.join(exports, name)
        with open(os.path.join(directory, "config.json"), encoding="utf-8") as f:
            config = json.load(f)
        architecture = config["architectures"][0]
        model, info = AUTO[architecture].from_pretrained(directory, output_loading_info=True)
        assert type(model).__name__ == architecture, (name, type(model).__name__)
        problems = {k: v for k, v in info.items() if v}
        assert not problems, f"{name}: transformers did not load the export cleanly: {problems}"
        model.eval()
        feed = choices if architecture == "BertForMultipleChoice" else (word_ids, mask, type_ids)
        with torch.no_grad():
            out = model(
                input_ids=torch.tensor(feed[0], dtype=torch.long),
                attention_mask=torch.tensor(feed[1], dtype=torch.long),
                token_type_ids=torch.tensor(feed[2], dtype=torch.long),
            )
        pairs = OUTPUTS[architecture]
        for theirs, ours in zip(pairs[::2], pairs[1::2]):
            golden[f"{name}__{ours}"] = getattr(out, theirs).numpy().astype(np.float32)
        tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
        ids = tokenizer(list(TEXTS), add_special_tokens=False)["input_ids"]
        golden[f"{name}__token_ids"] = np.array(json.dumps(ids))
        golden[f"{name}__config"] = np.array(json.dumps(config, sort_keys=True))
        tensors = load_file(os.path.join(directory, "model.safetensors"))
        golden[f"{name}__tensors"] = np.array(
            json.dumps([[key, list(value.shape), fingerprint(value)] for key, value in sorted(tensors.items())])
        )
        if config.get("problem_type") == "multi_label_classification":
            golden[f"{name}__pipeline_scores"] = pipeline_scores(directory)
        if os.path.isfile(os.path.join(directory, SENTENCE_FILES[0])):
            golden.update(sentence_goldens(name, directory))
        print(f"{name}: {architecture}, {len(tensors)} tensors, outputs {[p for p in pairs[1::2]]}")
    np.savez_compressed(os.path.join(HERE, "hf_export.npz"), **golden)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
