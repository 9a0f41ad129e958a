"""Windows of token sequences longer than the model: google-research/bert's `doc_stride` windows and its
max-context rule (`run_squad.py`), in TensorFlow ops, so that one implementation cuts the runners' features
(eagerly: SQuAD contexts, long classification texts, long tagged sentences) and the exported models' requests
(traced into their signatures).

A text of `n` tokens and windows of `room` tokens every `step = min(stride, room)` tokens has the windows the
reference loop makes (`start += min(length, doc_stride)` until a window reaches the end), in closed form: window
`i` starts at `i * step`, holds `min(room, n - i * step)` tokens, and there are `1 + ceil(max(n - room, 0) / step)`
of them; an empty text has one empty window, so that every text gets an output.

A token in several windows is scored in the one where it has the most context: the largest
`min(left, right) + 0.01 * window length` (left, right: the window's tokens before and after it), the first such
window on a tie. Scores are compared as the integers `100 * min(left, right) + length`, which order them as the
reference's floats do and make a tie a tie.
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf

POOLING = ("mean", "max")  # how a text's window outputs combine into the text's


@dataclasses.dataclass(frozen=True)
class TokenWindows:
    """The windows of a batch of texts, in text order and, within a text, in start order.

    Attributes:
        text: int64 `[w]` the text each window belongs to.
        start: int64 `[w]` the window's first token, a position in its text.
        length: int64 `[w]` tokens in the window.
        lengths: int64 `[n]` tokens of each text.
    """

    text: tf.Tensor
    start: tf.Tensor
    length: tf.Tensor
    lengths: tf.Tensor

    def tokens(self, values: tf.RaggedTensor) -> tf.RaggedTensor:
        """Each window's slice of `values` (`[n, (tokens), ...]`, the texts' token ids, labels or offsets):
        `[w, (length), ...]`."""
        return tf.RaggedTensor.from_row_lengths(
            tf.gather(values.flat_values, self._text_token()), self.length, validate=False
        )

    def max_context(self) -> tf.RaggedTensor:
        """bool `[w, (length)]`: whether a window token is scored in this window (the module's rule); each token of
        a text is so in exactly one window."""
        token, window = self._text_token(), self._window()
        position = self._position()
        score = 100 * tf.minimum(position, tf.gather(self.length, window) - 1 - position) + tf.gather(
            self.length, window
        )
        total = tf.reduce_sum(self.lengths)
        best = tf.gather(tf.math.unsorted_segment_max(score, token, total), token)
        first = tf.math.unsorted_segment_min(tf.where(score == best, window, tf.int64.max), token, total)
        return tf.RaggedTensor.from_row_lengths(tf.gather(first, token) == window, self.length, validate=False)

    def merge(self, values: tf.RaggedTensor) -> tf.RaggedTensor:
        """Each text token's value from the window where it has the most context.

        Args:
            values: `[w, (length), ...]`, one value (a tag id, a logit vector) per window token.

        Returns:
            `[n, (tokens), ...]`.
        """
        chosen = self.max_context().flat_values
        token = tf.boolean_mask(self._text_token(), chosen)
        picked = tf.boolean_mask(values.flat_values, chosen)
        shape = tf.concat([tf.reduce_sum(self.lengths)[None], tf.shape(picked, out_type=tf.int64)[1:]], 0)
        return tf.RaggedTensor.from_row_lengths(
            tf.scatter_nd(token[:, None], picked, shape), self.lengths, validate=False
        )

    def pool(self, values: tf.Tensor, how: str = "mean") -> tf.Tensor:
        """A text's output from its windows' (logits `[w, ...]` -> `[n, ...]`): their mean, or their maximum."""
        if how not in POOLING:
            raise ValueError(f"window pooling must be one of {POOLING}, got {how!r}.")
        combine = tf.math.unsorted_segment_mean if how == "mean" else tf.math.unsorted_segment_max
        return combine(values, self.text, tf.size(self.lengths, out_type=tf.int64))

    def _window(self) -> tf.Tensor:
        """The window of each window token, int64 `[window tokens]`."""
        return tf.repeat(tf.range(tf.size(self.length, out_type=tf.int64)), self.length)

    def _position(self) -> tf.Tensor:
        """Each window token's position in its window, int64 `[window tokens]`."""
        return tf.ragged.range(self.length).flat_values

    def _text_token(self) -> tf.Tensor:
        """Each window token's index among all the texts' tokens (`values.flat_values`), int64."""
        text_start = tf.gather(tf.cumsum(self.lengths, exclusive=True), self.text) + self.start
        return tf.gather(text_start, self._window()) + self._position()


def cut_windows(lengths, room, stride) -> TokenWindows:
    """The windows of texts of `lengths` tokens (module docstring).

    Args:
        lengths: int `[n]` tokens per text.
        room: int, scalar or `[n]`: tokens a window of each text holds (>= 1).
        stride: int, scalar or `[n]`: tokens between a text's window starts (>= 1; at most `room` is used).

    Returns:
        A `TokenWindows`.
    """
    lengths = tf.cast(lengths, tf.int64)
    room = tf.broadcast_to(tf.cast(room, tf.int64), tf.shape(lengths))
    step = tf.minimum(tf.broadcast_to(tf.cast(stride, tf.int64), tf.shape(lengths)), room)
    counts = 1 + tf.maximum(lengths - room + step - 1, 0) // step
    text = tf.repeat(tf.range(tf.size(lengths, out_type=tf.int64)), counts)
    start = tf.ragged.range(counts).flat_values * tf.gather(step, text)
    length = tf.minimum(tf.gather(room, text), tf.gather(lengths, text) - start)
    return TokenWindows(text=text, start=start, length=length, lengths=lengths)
