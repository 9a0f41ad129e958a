"""Named-entity data: CoNLL-2003 files or tfds `conll2003`, and first-subword token labels.

Words are joined by single spaces and tokenised once by the in-graph `BertTokenizer.tokenize_with_offsets`; a
NumPy step maps each token's byte offset to its word (`np.searchsorted` over the words' start offsets). The
first WordPiece of a word carries the word's label, every other piece (and [CLS], [SEP], padding) the label
IGNORE, which the loss and the metrics skip (the paper's NER set-up, Sec. 5.3).
"""

from __future__ import annotations

import dataclasses
import io
import re

import numpy as np
import tensorflow as tf

from keras_bert_lite.data.errors import SKIP_HINT, DataError, report_bad_rows
from keras_bert_lite.data.features import tokenize_fn
from keras_bert_lite.data.text_files import read_text, undecodable

IGNORE = -100


@dataclasses.dataclass
class TaggedSentences:
    """Sentences of words with one tag per word (tags None for unlabeled data).

    Attributes:
        words: list of word lists.
        tags: list of tag lists (strings), or None.
        lines: first line of each sentence in `source` (None for tfds).
        source: where the sentences came from.
    """

    words: list
    tags: list | None
    lines: list | None
    source: str

    def __len__(self) -> int:
        return len(self.words)


_FIELD = re.compile(r"[^ \t\r\n]+")  # columns part at ASCII spaces and tabs: a no-break space stays in its word


def _columns(line: str) -> list[str]:
    """A line's columns: split at tabs if the line holds one (a column may then hold spaces: `New York\tB-LOC`),
    else at ASCII spaces; [] for a blank line."""
    if "\t" not in line:
        return _FIELD.findall(line)
    columns = [column.strip(" \r\n") for column in line.split("\t")]
    while columns and not columns[-1]:
        columns.pop()
    return columns


def read_conll(path: str, *, skip_bad_rows: bool = False) -> TaggedSentences:
    """Reads a CoNLL-2003 file: `word POS chunk TAG` per line (the word first, the tag last, at least two
    columns), a blank line between sentences, `-DOCSTART-` lines ignored.

    Comment lines before a sentence are skipped: CoNLL-U's `# text = ...`, MultiCoNER's `# id ...<TAB>domain=en`.
    Such a line starts with `#` and its last column is no tag of the file; a sentence that starts with the word
    `#` (CoNLL-2003's `# # I-NP O`) ends in one of the file's tags, and stays a sentence.

    A line holding a tab is split at tabs, so that its word may hold spaces (`New York\tB-LOC`): such a word
    stays one word, labelled on its first WordPiece and given one prediction, so that predictions line up with
    the file's lines. Other lines are split at ASCII spaces (a no-break space stays inside its word).

    Raises:
        DataError: "path:line: ..." for a line with a single column, an empty word before a tab, or bytes that
            are not UTF-8 (unless skip_bad_rows, which skips the line); for a file whose every line has one
            column (words without tags), or whose tags are in the first column (`B-PER Peter`), whatever
            skip_bad_rows.
    """
    sentences, tags, lines, bad = [], [], [], []
    words, labels, first = [], [], None
    tagged, words_only = False, None  # any line with a tag column; the first line with a single column
    text_lines = io.StringIO(read_text(path), newline=None).readlines() + [""]
    rows = [_columns(line) for line in text_lines]
    file_tags = {fields[-1] for fields in rows if len(fields) > 1 and not fields[0].startswith("#")}
    for number, (line, fields) in enumerate(zip(text_lines, rows), 1):
        if not fields or fields[0] == "-DOCSTART-":
            if words:
                sentences.append(words), tags.append(labels), lines.append(first)
            words, labels, first = [], [], None
            continue
        if not words and fields[0].startswith("#") and fields[-1] not in file_tags:
            continue  # a comment before a sentence: `# text = ...`, `# id ...`
        tagged = tagged or len(fields) > 1
        if len(fields) == 1 and not words_only:
            words_only = (number, fields[0])
        problem = (
            undecodable(line, path)
            or (
                ""
                if len(fields) > 1
                else (
                    f"{line.strip()!r} has one column; a CoNLL line is `word ... TAG` (the word first, the entity tag "
                    "last), sentences separated by blank lines"
                )
            )
            or (
                ""
                if fields[0]
                else (f"{line.rstrip()!r} has an empty word before its first tab; put the word first (`word<TAB>TAG`)")
            )
        )
        if problem:
            bad.append(f"{path}:{number}: {problem}; {SKIP_HINT}.")
            continue
        words.append(fields[0])
        labels.append(fields[-1])
        first = first or number
    if words_only and not tagged:
        number, word = words_only
        raise DataError(
            f"{path}:{number}: {word!r} has one column, as has every line of this file: no tag column; "
            f"add one: each word's tag (`{word} B-PER`), or for unlabeled sentences to tag (--test_file) "
            f"a dummy tag (`{word} O`)."
        )
    report_bad_rows(path, bad, skip_bad_rows, "malformed lines")
    if not sentences:
        raise DataError(f"{path}: no sentences found; expected CoNLL-2003 lines `word POS chunk TAG`.")
    _refuse_tags_first(path, sentences, tags, lines)
    return TaggedSentences(sentences, tags, lines, path)


def _is_entity_tag(value: str) -> bool:
    """Whether `value` is "O" or has an IOB/IOBES/BILOU prefix (`B-PER`)."""
    return value == "O" or value.startswith(ENTITY_PREFIXES)


def _refuse_tags_first(path: str, sentences: list, tags: list, lines: list) -> None:
    """Raises a `DataError` for a file whose every word is an entity tag (`O`, `B-PER`) and whose last column
    is not: the columns are `TAG word`, which would train the words as tags and the tags as words."""
    if not all(_is_entity_tag(w) for words in sentences for w in words):  # stops at a file's first real word
        return
    last = next((t for labels in tags for t in labels if not _is_entity_tag(t)), None)
    if last is not None:
        raise DataError(
            f"{path}:{lines[0]}: the first column holds entity tags ({sentences[0][0]!r}) and the last "
            f"does not ({last!r}); a CoNLL line is `word ... TAG`, the word first and the tag last: swap "
            "the columns (for two: `awk '{print $2, $1}'`)."
        )


def load_tfds(split: str, data_dir: str | None = None) -> TaggedSentences:
    """tfds `conll2003` (IOB2 tags) as TaggedSentences."""
    import tensorflow_datasets as tfds

    builder = tfds.builder("conll2003", data_dir=data_dir)
    names = builder.info.features["ner"].feature.names
    words, tags = [], []
    for example in tfds.as_numpy(
        builder.as_dataset(split=split)
        if builder.is_prepared()
        else tfds.load("conll2003", split=split, data_dir=data_dir)
    ):
        words.append([w.decode("utf-8") for w in example["tokens"]])
        tags.append([names[int(t)] for t in example["ner"]])
    return TaggedSentences(words, tags, None, f"tfds conll2003:{split}")


def tag_names(sentences: TaggedSentences) -> list[str]:
    """Sorted distinct tags, "O" first."""
    found = {t for tags in sentences.tags for t in tags}
    return sorted(found, key=lambda t: (t != "O", t))


ENTITY_PREFIXES = ("B-", "I-", "E-", "S-", "L-", "U-")  # IOB1, IOB2, IOBES and BILOU


def marks_entities(names: list[str]) -> bool:
    """Whether tags name entity spans: some tag other than "O" starts with an IOB/IOBES/BILOU prefix (`B-PER`).

    Tags without one (part of speech: `NN`, `VB`) tag words, not spans.
    """
    return any(name != "O" and name.startswith(ENTITY_PREFIXES) for name in names)


def encode_tags(sentences: TaggedSentences, names: list[str]) -> list[np.ndarray]:
    """Tag ids per sentence. Raises DataError for a tag not in `names` (naming the line and the known tags)."""
    index = {n: i for i, n in enumerate(names)}
    encoded = []
    for s, tags in enumerate(sentences.tags):
        unknown = [t for t in tags if t not in index]
        if unknown:
            where = f"{sentences.source}:{sentences.lines[s]}" if sentences.lines else f"{sentences.source} #{s}"
            raise DataError(
                f"{where}: unknown tag {unknown[0]!r} in this sentence; the known tags (from the "
                f"training data) are {names}."
            )
        encoded.append(np.array([index[t] for t in tags], np.int32))
    return encoded


def tokenize_words(tokenizer, sentences: TaggedSentences, max_tokens: int | None = None):
    """Tokenises the sentences (words joined by spaces) in the graph and finds each token's word.

    Returns:
        (ids int32 RaggedTensor `[n, (tokens)]`, word index of each token as a list of int arrays, first-piece
        flags as a list of bool arrays); rows cut to `max_tokens` (None: whole).
    """
    texts = [" ".join(words) for words in sentences.words]
    fn = tokenize_fn(tokenizer, with_offsets=True)
    ids, word_of, first = [], [], []
    for begin in range(0, len(texts), 4096):
        chunk = texts[begin : begin + 4096]
        out = fn(tf.constant(chunk))
        starts = out.starts.to_list()
        for j, row in enumerate(out.ids.to_list()):
            words = sentences.words[begin + j]
            word_starts = np.cumsum([0] + [len(w.encode("utf-8")) + 1 for w in words[:-1]])
            index = np.searchsorted(word_starts, np.asarray(starts[j], np.int64), side="right") - 1
            is_first = np.r_[True, index[1:] != index[:-1]] if len(index) else np.zeros(0, bool)
            ids.append(row[:max_tokens])
            word_of.append(index[:max_tokens])
            first.append(is_first[:max_tokens])
    return tf.ragged.constant(ids, dtype=tf.int32, ragged_rank=1) if ids else None, word_of, first


def token_labels(word_of: list, first: list, word_tags: list) -> tf.RaggedTensor:
    """Per-token labels: the word's tag id on its first piece, IGNORE elsewhere. int32 `[n, (tokens)]`."""
    rows = [
        np.where(f, tags[w], IGNORE).astype(np.int32) if len(w) else np.zeros(0, np.int32)
        for w, f, tags in zip(word_of, first, word_tags)
    ]
    return tf.RaggedTensor.from_row_lengths(
        np.concatenate(rows) if rows else np.zeros(0, np.int32), [len(r) for r in rows]
    )


def pack_token_labels(inputs: dict, labels: tf.RaggedTensor) -> tf.Tensor:
    """Aligns a batch of token labels with `BertPacker` output: IGNORE at [CLS], [SEP] and padding.

    Args:
        inputs: the packed batch (its `input_word_ids` gives the padded shape).
        labels: int RaggedTensor `[b, (tokens)]`, already cut to seq_length - 2.

    Returns:
        int32 `[b, seq]`.
    """
    labels = tf.cast(labels, tf.int32)
    edge = tf.fill([labels.nrows(), 1], IGNORE)
    packed = tf.concat([edge, labels, edge], axis=1)
    return packed.to_tensor(default_value=IGNORE, shape=tf.shape(inputs["input_word_ids"]))
