"""`BertTokenizer`: text → WordPiece ids in the graph, identical to the reference BERT tokenizer."""

from __future__ import annotations

import typing

import tensorflow as tf

from keras_bert_lite.text.pretokenize import Pretokenizer
from keras_bert_lite.text.vocab import CONTINUATION_PREFIX, Vocab
from keras_bert_lite.text.wordpiece import FastWordpiece, PortableWordpiece

VARIANTS = ("default", "portable")
_PRINTABLE_ASCII = r"[\t\n\r\x20-\x7e]*"
WORD_SEPARATOR = r"[\s\p{Z}]"  # a whitespace or separator character (RE2): what parts words
_FROM_SEPARATOR = rf"(?s){WORD_SEPARATOR}.*"  # a string from its first separator on


class TokensWithOffsets(typing.NamedTuple):
    """`BertTokenizer.tokenize_with_offsets` output, all RaggedTensor `[batch, (tokens)]`.

    Attributes:
        ids: int32 token ids.
        starts: int64 byte offset in the input string where the token's text starts.
        ends: int64 byte offset where it ends (exclusive). `text[start:end]` is the original text of the token
            (for a piece inside a character that normalisation expanded, such as a Hangul syllable, the whole
            character), with the characters right after it that normalisation deleted (the combining accent of
            a decomposed "é" in uncased mode, a control character), as in Hugging Face's offsets.
        words: int64 index, within its string, of the word (a whitespace-separated run of letters, or one
            punctuation mark or CJK ideograph) the token belongs to.
    """

    ids: tf.RaggedTensor
    starts: tf.RaggedTensor
    ends: tf.RaggedTensor
    words: tf.RaggedTensor


class BertTokenizer(tf.Module):
    """The BERT tokenizer (google-research/bert `tokenization.py`) as TensorFlow ops.

    Usable eagerly, in `tf.data.Dataset.map`, in `tf.function`, in Keras models and in SavedModels (the vocabulary
    and the Unicode tables are graph constants: nothing to copy beside the SavedModel).

        vocab = Vocab.from_file("vocab.txt")
        tokenizer = BertTokenizer(vocab)                     # the casing recorded beside vocab.txt
        tokenizer.tokenize(tf.constant(["Hello, world!"]))   # <tf.RaggedTensor [[7592, 1010, 2088, 999]]>

    Args:
        vocab: a `Vocab`, or a path to `vocab.txt` / `tokenizer.json`.
        lower_case: True for uncased vocabularies (lower-case, strip accents), False for cased ones. Default:
            the vocabulary's own (`Vocab.resolve_lower_case`); a value that contradicts the casing recorded
            beside the vocabulary raises ValueError.
        variant: "default" uses tf_text's FastWordpieceTokenize op for WordPiece (faster; stock TF Serving links
            it; loading the SavedModel needs `import tensorflow_text`); "portable" uses only core TensorFlow ops.
            Both give identical ids and offsets.
        max_chars_per_word: words with more characters become [UNK] (the reference default is 100 in Hugging
            Face's copy, 200 in google-research/bert).
    """

    def __init__(
        self,
        vocab: Vocab | str,
        *,
        lower_case: bool | None = None,
        variant: str = "default",
        max_chars_per_word: int = 100,
        name: str | None = None,
    ):
        super().__init__(name=name)
        if variant not in VARIANTS:
            raise ValueError(f"BertTokenizer: variant={variant!r}; use one of {VARIANTS}.")
        if lower_case is not None and not isinstance(lower_case, bool):
            raise TypeError(
                f"BertTokenizer: lower_case={lower_case!r}; pass True (uncased vocab), False (cased) or "
                "None (the vocabulary's)."
            )
        self.vocab = vocab if isinstance(vocab, Vocab) else Vocab.from_file(vocab)
        lower_case = self.vocab.resolve_lower_case(lower_case)
        self.lower_case = lower_case
        self.variant = variant
        self.max_chars_per_word = max_chars_per_word
        self._pretokenizer = Pretokenizer(lower_case)
        wordpiece = FastWordpiece if variant == "default" else PortableWordpiece
        self._wordpiece = wordpiece(self.vocab, max_chars_per_word)
        self._tokens = tf.constant(self.vocab.tokens)
        self._is_continuation = tf.constant(self.vocab.is_continuation)
        if variant == "default":
            import tensorflow_text as tf_text

            self._ascii_wordpiece = tf_text.FastWordpieceTokenizer(
                vocab=list(self.vocab.tokens),
                suffix_indicator=CONTINUATION_PREFIX,
                max_bytes_per_word=max_chars_per_word,
                token_out_type=tf.int32,
                unknown_token=self.vocab.tokens[self.vocab.unk_id],
                no_pretokenization=False,
            )

    def tokenize(self, text) -> tf.RaggedTensor:
        """Text → WordPiece ids, flattened over words, without special tokens.

        Args:
            text: tf.string `[batch]` (or a list of str/bytes). Invalid UTF-8 is replaced, then dropped.

        Returns:
            int32 RaggedTensor `[batch, (tokens)]`.
        """
        return self._tokenize(_as_strings(text), offsets=False)[0]

    def tokenize_with_offsets(self, text) -> TokensWithOffsets:
        """Like `tokenize`, plus where each token came from in the original string (for SQuAD/NER).

        Args:
            text: tf.string `[batch]`.

        Returns:
            `TokensWithOffsets` of RaggedTensors `[batch, (tokens)]`.
        """
        text = _as_strings(text)
        ids, starts, ends = self._tokenize(text, offsets=True)
        # Printable ASCII deletes no character.
        ends = tf.cond(
            tf.reduce_all(tf.strings.regex_full_match(text, _PRINTABLE_ASCII)),
            lambda: ends,
            lambda: ends.with_flat_values(_through_deleted(text, starts, ends)),
        )
        # A word's first piece is never a "##" piece, every later one is: that numbers the words.
        begins_word = tf.cast(~tf.gather(self._is_continuation, ids.flat_values), tf.int64)
        through = tf.cumsum(begins_word)
        words = (
            through - 1 - tf.gather(tf.concat([[0], through], axis=0), tf.gather(ids.row_splits, ids.value_rowids()))
        )
        return TokensWithOffsets(ids=ids, starts=starts, ends=ends, words=ids.with_flat_values(words))

    def _tokenize(self, text, offsets: bool) -> tuple:
        """(ids,) or, with `offsets`, (ids, starts, ends): RaggedTensors `[batch, (tokens)]`.

        Without offsets the character-span bookkeeping, a large share of the work on non-ASCII text, is skipped.
        """
        if self.variant == "portable":
            return self._general(text, offsets)
        # Printable-ASCII lines (most English text) take tf_text's one-op path: on them its whitespace and
        # punctuation split, byte limit and ASCII lower-casing are the reference's (pinned by the tests).
        # A batch of only such lines skips the general path's ~100 ops and the re-ordering entirely: even on
        # zero rows they cost as much as tokenising a sentence (serving latency at batch 1).
        simple = tf.strings.regex_full_match(text, _PRINTABLE_ASCII)
        return tf.cond(
            tf.reduce_all(simple),
            lambda: self._printable_ascii(text, offsets),
            lambda: self._mixed(text, simple, offsets),
        )

    def _mixed(self, text, simple, offsets):
        """Rows where `simple` is True through `_printable_ascii`, the others through `_general`, in order."""
        simple_rows, other_rows = tf.where(simple)[:, 0], tf.where(~simple)[:, 0]
        parts = zip(
            self._printable_ascii(tf.gather(text, simple_rows), offsets),
            self._general(tf.gather(text, other_rows), offsets),
        )
        order = tf.argsort(tf.concat([simple_rows, other_rows], axis=0))
        return tuple(tf.gather(tf.concat(pair, axis=0), order) for pair in parts)

    def _general(self, text, offsets):
        """Any text: our reference pre-tokenizer (core ops), then WordPiece."""
        words = self._pretokenizer(text, offsets)
        pieces = self._wordpiece(words.chars.values, offsets)  # [all words, (pieces)]
        values = [pieces.ids.flat_values]
        if offsets:
            word_starts, word_ends = words.starts.values, words.ends.values  # [all words, (chars)]
            piece_word = pieces.ids.value_rowids()
            values.append(
                tf.gather(
                    word_starts.flat_values, tf.gather(word_starts.row_starts(), piece_word) + pieces.begins.flat_values
                )
            )
            values.append(
                tf.gather(
                    word_ends.flat_values, tf.gather(word_ends.row_starts(), piece_word) + pieces.ends.flat_values - 1
                )
            )
        splits = tf.gather(pieces.ids.row_splits, words.chars.row_splits)
        return tuple(tf.RaggedTensor.from_row_splits(v, splits) for v in values)

    def _printable_ascii(self, text, offsets):
        """Printable-ASCII text (and tab, newline, return) through tf_text's FastWordpieceTokenizer alone."""
        if self.lower_case:
            text = tf.strings.lower(text)  # ASCII only: equals str.lower() + accent stripping here
        if offsets:
            return tuple(self._ascii_wordpiece.tokenize_with_offsets(text))
        return (self._ascii_wordpiece.tokenize(text),)

    def detokenize(self, ids) -> tf.Tensor:
        """Ids → text: tokens joined by spaces, `##` pieces glued to the previous one (lossy: the reference
        lower-cases, strips accents and splits punctuation).

        Args:
            ids: int RaggedTensor or Tensor `[batch, (tokens)]`.

        Returns:
            tf.string `[batch]`.
        """
        tokens = tf.gather(self._tokens, ids)
        joined = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
        return tf.strings.regex_replace(joined, " " + CONTINUATION_PREFIX, "")


def _as_strings(text) -> tf.Tensor:
    """Checks for a string tensor `[batch]`; lists of str/bytes are converted."""
    if not isinstance(text, (tf.Tensor, tf.RaggedTensor)):
        try:
            text = tf.constant(text, dtype=tf.string)
        except (TypeError, ValueError) as error:
            raise TypeError(
                f"BertTokenizer: expected strings (tf.string [batch] or a list of str/bytes), got "
                f"{type(text).__name__}: {error}"
            ) from None
    if text.dtype != tf.string:
        raise TypeError(
            f"BertTokenizer: expected a tf.string tensor, got dtype {text.dtype.name}; pass raw text, "
            "not ids (cast or decode it first)."
        )
    if text.shape.rank != 1:
        raise ValueError(
            f"BertTokenizer: expected text of shape [batch], got {text.shape}; reshape it, e.g. "
            "tf.reshape(text, [-1]) or batch the tf.data dataset before mapping."
        )
    return text


def _through_deleted(text, starts, ends):
    """The flat token ends moved past the characters after each token that normalisation deleted: the bytes up to
    the next token of its row (or the row's end), cut at the first whitespace or separator. A piece inside a
    character (whose next piece starts before its end) stays as it is."""
    row = starts.value_rowids()
    start, end = starts.flat_values, ends.flat_values
    is_last = tf.range(tf.size(start, out_type=tf.int64)) + 1 == tf.gather(starts.row_splits[1:], row)
    limit = tf.where(
        is_last,
        tf.cast(tf.gather(tf.strings.length(text), row), tf.int64),
        tf.concat([start[1:], tf.zeros([1], tf.int64)], 0),
    )
    gap = tf.strings.substr(tf.gather(text, row), end, tf.maximum(limit - end, 0))
    deleted = tf.strings.regex_replace(gap, _FROM_SEPARATOR, "")
    return end + tf.cast(tf.strings.length(deleted), tf.int64)
