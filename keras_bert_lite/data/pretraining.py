"""The pretraining input pipeline: documents -> NSP pairs -> packed, dynamically masked examples, all in tf.data.

    documents (text files in the original format, or a tensorflow-datasets text dataset)
      -> sentences tokenised in the graph (the same BertTokenizer as fine-tuning and serving)
      -> windows of K documents -> NSP instances (instances.py), truncated as the original
      -> shuffled -> packed [CLS] A [SEP] B [SEP] -> masked (masking.py) -> (features, labels) examples

Every random choice is stateless and keyed by the seed and the position in the stream, so the same seed gives
the same examples, every pass over the data draws new pairs and masks, and the iterator state can be
checkpointed (exact resume). The dataset repeats indefinitely.

Sharding over workers (`tf.distribute.InputContext`): by file when there are at least as many files as input
pipelines (each worker reads its own files), otherwise by example after the instances are built (each worker
builds the whole stream and keeps every n-th example) — then N workers see exactly the examples of a
single-process run with the same global batch.
"""

from __future__ import annotations

import glob
import os

import tensorflow as tf

from keras_bert_lite.data.corpus_documents import file_documents, split_documents
from keras_bert_lite.data.corpus_text import check_start, corpus_compression, require_documents
from keras_bert_lite.data.errors import DataError
from keras_bert_lite.data.instances import nsp_spans, truncate_pair
from keras_bert_lite.data.masking import DynamicMasker
from keras_bert_lite.utils.bounds import check_argument

FEATURES = ("input_word_ids", "input_mask", "input_type_ids", "masked_lm_positions")
LABELS = ("masked_lm_ids", "masked_lm_weights", "next_sentence_labels")
__all__ = ["expand_patterns", "pretraining_dataset", "split_documents", "text_file_documents", "tfds_documents"]


def expand_patterns(patterns) -> list[str]:
    """Sorted files matching the glob patterns (a string with commas, or a list). A pattern that names an existing
    file is that file, glob characters and all (`wiki[2024].txt`).

    Raises:
        DataError: a pattern matches no file (naming it).
    """
    if isinstance(patterns, str):
        patterns = [p for p in patterns.split(",") if p]
    files = []
    for pattern in patterns:
        path = os.path.expanduser(pattern)
        matched = [path] if os.path.isfile(path) else sorted(glob.glob(path))
        if not matched:
            raise DataError(
                f"{pattern}: no input file matches; check the path (a comma-separated list of files or "
                "globs, e.g. corpus/*.txt)."
            )
        files += matched
    return sorted(set(files))


def text_file_documents(
    patterns, seed: int = 0, num_shards: int = 1, shard: int = 0, window_docs: int = 256
) -> tf.data.Dataset:
    """Documents of text files in the original BERT format, plain or gzip-compressed, read as a stream
    (corpus_documents.py), files shuffled every pass (seeded).

    Bytes that are not UTF-8 are dropped, as BERT's tokenizer drops them; a file whose first MiB holds some gets
    a warning (corpus_text.py).

    Args:
        patterns: files or globs (a string with commas, or a list).
        seed: the seed of the files' order.
        num_shards, shard: read every `num_shards`-th file, starting at `shard`.
        window_docs: `pretraining_dataset`'s, for the check that the files hold documents enough.

    Raises:
        DataError: a file is compressed in a format other than gzip, is refused by its first MiB, or the files of
            this shard hold fewer than two documents (corpus_text.py): the endless stream would never yield, or
            "not next" pairs would come from the same document.
    """
    files = expand_patterns(patterns)
    compressions = [corpus_compression(path) for path in files]
    own = files[shard::num_shards]
    check_start(own)
    require_documents(own, window_docs, f"input pipeline {shard} of {num_shards}" if num_shards > 1 else "")
    ds = tf.data.Dataset.from_tensor_slices((files, compressions))
    if num_shards > 1:
        ds = ds.shard(num_shards, shard)
    ds = ds.shuffle(len(files), seed=seed, reshuffle_each_iteration=True).repeat()
    return ds.flat_map(file_documents)


def tfds_documents(
    name: str,
    split: str = "train",
    text_key: str = "text",
    seed: int = 0,
    input_context: tf.distribute.InputContext | None = None,
) -> tf.data.Dataset:
    """Documents of a tensorflow-datasets text dataset (e.g. "wikipedia/20230601.en"), streamed, repeated.

    Paragraphs (lines) are split into sentences after ., ! or ? followed by whitespace.
    """
    import tensorflow_datasets as tfds

    read_config = tfds.ReadConfig(shuffle_seed=seed, input_context=input_context)
    ds = tfds.load(name, split=split, shuffle_files=True, read_config=read_config)

    def to_document(example):
        text = tf.strings.regex_replace(example[text_key], r"([.!?])[ \t]+", "\\1\n")
        return tf.strings.regex_replace(text, r"\n(?:[ \t]*\n)+", "\n")

    return ds.map(to_document).repeat()


def pretraining_dataset(
    documents: tf.data.Dataset,
    tokenizer,
    packer,
    masker: DynamicMasker,
    *,
    short_seq_prob: float = 0.1,
    window_docs: int = 256,
    shuffle_buffer: int = 10_000,
    seed: int = 0,
    num_shards: int = 1,
    shard: int = 0,
) -> tf.data.Dataset:
    """Unbatched `(features, labels)` pretraining examples, generated on the fly.

    Args:
        documents: a repeating dataset of document strings (sentences separated by "\\n"), e.g. from
            `text_file_documents` or `tfds_documents`.
        tokenizer: a `keras_bert_lite.text.BertTokenizer`.
        packer: a `keras_bert_lite.text.BertPacker` with the model's seq_length.
        masker: a `DynamicMasker`.
        short_seq_prob: probability of a shorter target length per document (0.1 in the original), in [0, 1].
        window_docs: documents per window, >= 2; B of a NotNext pair comes from another document of the window.
        shuffle_buffer: instances shuffled together, >= 1 (1: no shuffling).
        seed: the seed of every random choice.
        num_shards, shard: keep every `num_shards`-th example starting at `shard` (example-level sharding;
            pass 1, 0 when the documents are already sharded by file).

    Returns:
        Examples `(features, labels)`: features `input_word_ids`, `input_mask`, `input_type_ids` `[seq]` and
        `masked_lm_positions` `[P]`; labels `masked_lm_ids`, `masked_lm_weights` `[P]` and
        `next_sentence_labels` `[]` (1 = B is a random span, NotNext).

    Raises:
        ValueError: `short_seq_prob`, `window_docs` or `shuffle_buffer` out of its range.
    """
    check_argument("short_seq_prob", short_seq_prob, minimum=0, maximum=1)
    check_argument("window_docs", window_docs, minimum=2)
    check_argument("shuffle_buffer", shuffle_buffer, minimum=1)
    seq_length = packer.seq_length
    max_num_tokens = seq_length - 3
    autotune = tf.data.AUTOTUNE
    # Each function below is graph code (its loops and branches are tf.while_loop/tf.cond), so tf.data traces it
    # without autograph: autograph would rewrite the source of every function these call (the tokenizer, the
    # NSP spans, the masker) at each start of a run, for the same graph.
    no_autograph = tf.autograph.experimental.do_not_convert

    @no_autograph
    def tokenize_document(doc):
        lines = tf.strings.split(doc, "\n")
        lines = tf.boolean_mask(lines, tf.strings.length(tf.strings.strip(lines)) > 0)
        sentences = tokenizer.tokenize(lines)  # [n, (tokens)]
        return tf.gather(sentences, tf.where(sentences.row_lengths() > 0)[:, 0])

    @no_autograph
    def make_instances(window_index, window):
        window_seed = tf.stack([tf.cast(seed, tf.int64), window_index])
        a_start, a_end, b_start, b_end, is_random = nsp_spans(window, window_seed, max_num_tokens, short_seq_prob)
        a_front, a_back, b_front, b_back = truncate_pair(
            a_end - a_start, b_end - b_start, max_num_tokens, tf.random.experimental.stateless_fold_in(window_seed, 1)
        )
        tokens = window.flat_values

        def segment(start, end):
            return tf.RaggedTensor.from_row_lengths(
                tf.gather(tokens, tf.ragged.range(start, end).flat_values), tf.cast(end - start, tf.int64)
            )

        return {
            "tokens_a": segment(a_start + a_front, a_end - a_back),
            "tokens_b": segment(b_start + b_front, b_end - b_back),
            "next_sentence_labels": is_random,
        }

    @no_autograph
    def pack_and_mask(group_index, group):
        packed = packer(group["tokens_a"], group["tokens_b"])
        masked = masker(packed["input_word_ids"], tf.stack([tf.cast(seed, tf.int64) + 1, group_index]))
        features = {
            "input_word_ids": masked["input_word_ids"],
            "input_mask": packed["input_mask"],
            "input_type_ids": packed["input_type_ids"],
            "masked_lm_positions": masked["masked_lm_positions"],
        }
        labels = {
            "masked_lm_ids": masked["masked_lm_ids"],
            "masked_lm_weights": masked["masked_lm_weights"],
            "next_sentence_labels": group["next_sentence_labels"],
        }
        return features, labels

    docs = documents.map(tokenize_document, num_parallel_calls=autotune, deterministic=True)
    docs = docs.filter(no_autograph(lambda sentences: sentences.nrows() > 0))
    instances = (
        docs.ragged_batch(window_docs, drop_remainder=True)
        .enumerate()
        .map(make_instances, num_parallel_calls=autotune, deterministic=True)
        .unbatch()
    )
    examples = (
        instances.shuffle(shuffle_buffer, seed=seed)
        .ragged_batch(64, drop_remainder=True)
        .enumerate()
        .map(pack_and_mask, num_parallel_calls=autotune, deterministic=True)
        .unbatch()
    )
    if num_shards > 1:
        examples = examples.shard(num_shards, shard)
    return examples
