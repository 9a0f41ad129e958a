"""`BertTokenizer`: text → WordPiece ids in the graph, identical to the reference BERT tokenizer."""

from __future__ import annotations

import typing

import tensorflow as tf

from keras_bert_lite.text.pretokenize import Pretokenizer
from keras_bert_lite.text.vocab import CONTINUATION_PREFIX, Vocab
from keras_bert_lite.text.wordpiece import FastWordpiece, PortableWordpiece

VARIANTS = ("default", "portable")


class TokensWithOffsets(typing.NamedTuple):
    """`BertTokenizer.tokenize_with_offsets` output, all RaggedTensor `[batch, (tokens)]`.

    Attributes:
        ids: int32 token ids.
        starts: int64 byte offset in the input string where the token's text starts.
        ends: int64 byte offset where it ends (exclusive). `text[start:end]` is the original text of the token
            (for a piece inside a character that normalisation expanded, such as a Hangul syllable, the whole
            character).
        words: int64 index of the word (whitespace/punctuation/CJK unit) the token belongs to, within its string.
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
        tokenizer = BertTokenizer(vocab, lower_case=True)
        tokenizer.tokenize(tf.constant(["Hello, world!"]))   # <tf.RaggedTensor [[7592, 1010, 2088, 999]]>

    Args:
        vocab: a `Vocab`, or a path to `vocab.txt` / `tokenizer.json`.
        lower_case: True for uncased vocabularies (lower-case, strip accents), False for cased ones. Required:
            a wrong value silently changes the ids.
        variant: "default" uses tf_text's FastWordpieceTokenize op for WordPiece (faster; stock TF Serving links
            it; loading the SavedModel needs `import tensorflow_text`); "portable" uses only core TensorFlow ops.
            Both give identical ids and offsets.
        max_chars_per_word: words with more characters become [UNK] (the reference default is 100 in Hugging
            Face's copy, 200 in google-research/bert).
    """

    def __init__(self, vocab: Vocab | str, *, lower_case: bool, variant: str = "default",
                 max_chars_per_word: int = 100, name: str | None = None):
        super().__init__(name=name)
        if variant not in VARIANTS:
            raise ValueError(f"BertTokenizer: variant={variant!r}; use one of {VARIANTS}.")
        if not isinstance(lower_case, bool):
            raise TypeError(f"BertTokenizer: lower_case={lower_case!r}; pass True (uncased vocab) or False (cased).")
        self.vocab = vocab if isinstance(vocab, Vocab) else Vocab.from_file(vocab)
        self.lower_case = lower_case
        self.variant = variant
        self.max_chars_per_word = max_chars_per_word
        self._pretokenizer = Pretokenizer(lower_case)
        wordpiece = FastWordpiece if variant == "default" else PortableWordpiece
        self._wordpiece = wordpiece(self.vocab, max_chars_per_word)
        self._tokens = tf.constant(self.vocab.tokens)

    def tokenize(self, text) -> tf.RaggedTensor:
        """Text → WordPiece ids, flattened over words, without special tokens.

        Args:
            text: tf.string `[batch]` (or a list of str/bytes). Invalid UTF-8 is replaced, then dropped.

        Returns:
            int32 RaggedTensor `[batch, (tokens)]`.
        """
        return self.tokenize_with_offsets(text).ids

    def tokenize_with_offsets(self, text) -> TokensWithOffsets:
        """Like `tokenize`, plus where each token came from in the original string (for SQuAD/NER).

        Args:
            text: tf.string `[batch]`.

        Returns:
            `TokensWithOffsets` of RaggedTensors `[batch, (tokens)]`.
        """
        text = _as_strings(text)
        words = self._pretokenizer(text)
        pieces = self._wordpiece(words.chars.values)                 # [all words, (pieces)]
        word_starts = words.starts.values                            # [all words, (chars)]
        word_ends = words.ends.values
        piece_word = pieces.ids.value_rowids()
        starts = tf.gather(word_starts.flat_values, tf.gather(word_starts.row_starts(), piece_word)
                           + pieces.begins.flat_values)
        ends = tf.gather(word_ends.flat_values, tf.gather(word_ends.row_starts(), piece_word)
                         + pieces.ends.flat_values - 1)
        word_index = piece_word - tf.gather(words.chars.row_starts(), tf.gather(words.chars.value_rowids(),
                                                                                piece_word))
        per_text = words.chars.row_splits

        def nest(values):
            return tf.RaggedTensor.from_row_splits(values, tf.gather(pieces.ids.row_splits, per_text))

        return TokensWithOffsets(ids=nest(pieces.ids.flat_values), starts=nest(starts), ends=nest(ends),
                                 words=nest(word_index))

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
            raise TypeError(f"BertTokenizer: expected strings (tf.string [batch] or a list of str/bytes), got "
                            f"{type(text).__name__}: {error}") from None
    if text.dtype != tf.string:
        raise TypeError(f"BertTokenizer: expected a tf.string tensor, got dtype {text.dtype.name}; pass raw text, "
                        "not ids (cast or decode it first).")
    if text.shape.rank != 1:
        raise ValueError(f"BertTokenizer: expected text of shape [batch], got {text.shape}; reshape it, e.g. "
                         "tf.reshape(text, [-1]) or batch the tf.data dataset before mapping.")
    return text
