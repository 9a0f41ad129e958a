"""Dynamic masked-LM masking (Devlin et al. 2018, §3.1 Task #1), vectorised over a batch in TensorFlow ops.

For each sequence: choose ~15% of the maskable tokens (every token except [CLS], [SEP], [PAD], [MASK]) up to
`max_predictions`; replace 80% of the chosen tokens with [MASK], 10% with a random token, keep 10%. With
`whole_word=True` a word and its `##` continuation pieces are chosen together.

Two deliberate refinements of google-research/bert `create_pretraining_data.py`, both keeping the expected
rates exactly at the paper's numbers:
  * the number to predict is `floor(0.15 * n + u)`, u ~ U[0, 1) (randomised rounding), so the expected masked
    fraction is exactly 15% of maskable tokens also for short sequences (the original rounds `0.15 * len`,
    counting [CLS]/[SEP], which over-masks short sequences);
  * random replacements are drawn from the non-special tokens (the original can insert [CLS]/[PAD]).
Randomness is stateless (`tf.random.stateless_*`) and comes from the `seed` argument only: the same seed gives
the same masks; a pipeline passes a different seed per batch and epoch to draw fresh masks.
"""

from __future__ import annotations

import tensorflow as tf

MASK_RATE = 0.15


class DynamicMasker(tf.Module):
    """Masks batches of packed token ids.

    Args:
        vocab_size: number of token ids.
        mask_id: id of [MASK].
        special_ids: ids never masked nor used as random replacements ([PAD], [CLS], [SEP], [MASK], ...).
        continuation: optional bool per token id, True for `##` word pieces (needed for `whole_word`).
        mask_rate: fraction of maskable tokens to predict.
        max_predictions: the most predictions per sequence (P).
        whole_word: mask whole words (a word's pieces are chosen together).
    """

    def __init__(
        self,
        vocab_size: int,
        mask_id: int,
        special_ids,
        continuation=None,
        mask_rate: float = MASK_RATE,
        max_predictions: int = 20,
        whole_word: bool = False,
        name=None,
    ):
        super().__init__(name=name)
        if whole_word and continuation is None:
            raise ValueError("whole_word=True needs `continuation` (which ids are ## word pieces).")
        if not 0 < mask_rate < 1:
            raise ValueError(f"mask_rate must be in (0, 1), got {mask_rate}.")
        self.mask_id = int(mask_id)
        self.mask_rate = float(mask_rate)
        self.max_predictions = int(max_predictions)
        self.whole_word = bool(whole_word)
        special = set(int(i) for i in special_ids) | {self.mask_id}
        is_special = [i in special for i in range(vocab_size)]
        self._is_special = tf.constant(is_special)
        self._replacements = tf.constant([i for i in range(vocab_size) if i not in special], tf.int32)
        self._continuation = tf.constant(list(continuation) if continuation is not None else [False] * vocab_size)

    @classmethod
    def from_vocab(cls, vocab, **kwargs) -> "DynamicMasker":
        """Builds a masker from a `keras_bert_lite.text.Vocab` (special ids and `##` pieces from the vocab).

        [PAD], [CLS], [SEP] and [MASK] are never masked; [UNK] may be, as in the original.
        """
        return cls(
            vocab_size=len(vocab),
            mask_id=vocab.mask_id,
            special_ids=(vocab.pad_id, vocab.cls_id, vocab.sep_id, vocab.mask_id),
            continuation=vocab.is_continuation.tolist(),
            **kwargs,
        )

    def __call__(self, input_word_ids, seed):
        """Masks a batch.

        Args:
            input_word_ids: int32 `[b, s]` packed ids ([CLS] A [SEP] B [SEP] [PAD]...).
            seed: int `[2]` stateless seed; vary it per batch (and epoch) for fresh masks.

        Returns:
            A dict: `input_word_ids` `[b, s]` with the replacements applied, and the targets
            `masked_lm_positions` (int32), `masked_lm_ids` (int32), `masked_lm_weights` (float32),
            each `[b, P]`, sorted by position, padded with position 0 / id 0 / weight 0.
        """
        ids = tf.convert_to_tensor(input_word_ids, tf.int32)
        seed = tf.cast(tf.convert_to_tensor(seed), tf.int64)
        seeds = tf.random.experimental.stateless_split(seed, 5)
        batch, length = tf.shape(ids)[0], tf.shape(ids)[1]
        positions = tf.broadcast_to(tf.range(length)[None], [batch, length])

        maskable = ~tf.gather(self._is_special, ids)  # [b, s]
        # ---- Words: a maskable token starts a word unless it is a ## piece following a maskable token.
        if self.whole_word:
            follows_maskable = tf.pad(maskable[:, :-1], [[0, 0], [1, 0]])
            starts = maskable & ~(tf.gather(self._continuation, ids) & follows_maskable)
        else:
            starts = maskable
        word = tf.cumsum(tf.cast(starts, tf.int32), axis=1) - 1  # word index per token
        word = tf.where(maskable, word, length)  # non-maskable: no word
        # Length of each word, looked up at its start: count of tokens sharing the word index.
        flat_word = word + (length + 1) * tf.range(batch)[:, None]  # unique per row
        word_len = tf.math.unsorted_segment_sum(tf.ones_like(flat_word), flat_word, batch * (length + 1))
        start_len = tf.gather(word_len, flat_word)  # [b, s]

        # ---- Budget: floor(rate * maskable + u), at least 1 when anything is maskable, at most P.
        num_maskable = tf.reduce_sum(tf.cast(maskable, tf.float32), axis=1)
        u = tf.random.stateless_uniform([batch], seeds[0])
        budget = tf.floor(num_maskable * self.mask_rate + u)
        budget = tf.minimum(tf.maximum(budget, tf.minimum(num_maskable, 1.0)), float(self.max_predictions))

        # ---- Visit words in random order; take each while the running token count stays within budget.
        key = tf.where(starts, tf.random.stateless_uniform([batch, length], seeds[1]), 2.0)
        order = tf.argsort(key, axis=1, stable=True)  # starts first, shuffled
        sorted_len = tf.gather(tf.where(starts, start_len, 0), order, batch_dims=1)
        taken_sorted = (tf.cumsum(sorted_len, axis=1) <= tf.cast(budget, tf.int32)[:, None]) & (sorted_len > 0)
        taken_start = tf.scatter_nd(
            tf.stack([tf.repeat(tf.range(batch), length), tf.reshape(order, [-1])], 1),
            tf.reshape(taken_sorted, [-1]),
            [batch, length],
        )
        # A token is chosen if the start of its word was taken.
        word_taken = tf.math.unsorted_segment_max(
            tf.cast(tf.reshape(taken_start, [-1]), tf.int32),
            tf.reshape(tf.where(starts, flat_word, batch * (length + 1)), [-1]),
            batch * (length + 1) + 1,
        )
        chosen = (tf.gather(word_taken, flat_word) > 0) & maskable  # [b, s]

        # ---- 80% [MASK], 10% random non-special token, 10% unchanged.
        r = tf.random.stateless_uniform([batch, length], seeds[2])
        random_ids = tf.gather(
            self._replacements,
            tf.random.stateless_uniform(
                [batch, length], seeds[3], maxval=tf.shape(self._replacements)[0], dtype=tf.int32
            ),
        )
        replaced = tf.where(r < 0.8, self.mask_id, tf.where(r < 0.9, ids, random_ids))
        masked_ids = tf.where(chosen, replaced, ids)

        # ---- Targets: chosen positions in ascending order, padded to P.
        p = self.max_predictions
        rank = tf.where(chosen, positions, positions + length)
        first = tf.sort(rank, axis=1)[:, :p]
        first = tf.pad(first, [[0, 0], [0, tf.maximum(p - tf.shape(first)[1], 0)]], constant_values=2 * length)
        weights = tf.cast(first < length, tf.float32)
        masked_positions = tf.where(first < length, first, 0)
        masked_lm_ids = tf.gather(ids, masked_positions, batch_dims=1) * tf.cast(weights, tf.int32)
        return {
            "input_word_ids": masked_ids,
            "masked_lm_positions": masked_positions,
            "masked_lm_ids": masked_lm_ids,
            "masked_lm_weights": weights,
        }
