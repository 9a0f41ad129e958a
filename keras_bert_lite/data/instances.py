"""Next-sentence-prediction instances, built on the fly in TensorFlow ops (no pre-materialised dataset).

Follows google-research/bert `create_pretraining_data.py` (`create_instances_from_document`):
  * per document, a target length of `max_num_tokens` (= seq_length - 3), or with probability
    `short_seq_prob` a uniform length in [2, max_num_tokens];
  * sentences are gathered into a chunk until it reaches the target; segment A is the first 1..c-1 sentences;
  * B is the true continuation (the rest of the chunk), or — with probability 0.5 — a span of sentences from a
    random *different* document, long enough for the target; the unused sentences of the chunk go back to the
    document for the next instance;
  * the pair is truncated to max_num_tokens one token at a time from the longer segment, at the front or the
    back with equal probability.
Two refinements keep the paper's 50% IsNext rate exact where the original drifts: the random/true choice is
made for every chunk, and a true-continuation chunk of a single sentence is split inside the sentence (the
original forces such chunks to be random, so fewer than half its pairs are true continuations); and the random
document is drawn among the *other* documents of the window, so B never comes from A's document.

The "corpus" for random B is a window of documents (a ragged batch `[K, (sentences), (tokens)]`); the pipeline
feeds shuffled windows, so the draw is over a large, changing pool.
"""

from __future__ import annotations

import tensorflow as tf

from keras_bert_lite.text.packing import truncated_lengths


def _uniform(seed, counter):
    return tf.random.stateless_uniform([], tf.random.experimental.stateless_fold_in(seed, counter))


def _randint(seed, counter, low, high):
    """Uniform integer in [low, high) (high > low), int32."""
    u = _uniform(seed, counter)
    return low + tf.minimum(tf.cast(u * tf.cast(high - low, tf.float32), tf.int32), high - low - 1)


def nsp_spans(window: tf.RaggedTensor, seed, max_num_tokens: int, short_seq_prob: float = 0.1):
    """Chooses the instances of a window of documents as spans of its flat token array.

    Args:
        window: int `[K, (sentences), (tokens)]`; every sentence non-empty.
        seed: int `[2]` stateless seed.
        max_num_tokens: the most tokens in A + B (seq_length - 3).
        short_seq_prob: probability of a shorter target length for a document.

    Returns:
        (a_start, a_end, b_start, b_end, is_random): int32 `[I]` token offsets into `window.flat_values`
        (A = flat_values[a_start:a_end], likewise B) and 1 where B is a random span (NotNext), before truncation.
    """
    seed = tf.cast(seed, tf.int64)
    doc_splits = tf.cast(window.row_splits, tf.int32)  # document -> first sentence
    tok_splits = tf.cast(window.values.row_splits, tf.int32)  # sentence -> first token
    num_docs = tf.size(doc_splits) - 1
    max_num_tokens = tf.constant(max_num_tokens, tf.int32)

    def draw_target(counter):
        short = _uniform(seed, counter) < short_seq_prob
        return tf.where(short, _randint(seed, counter + 1, 2, max_num_tokens + 1), max_num_tokens)

    def random_span(doc, counter, target_b):
        """Sentences of another document from a random start until target_b tokens: (b_start, b_end)."""
        other = _randint(seed, counter, 0, tf.maximum(num_docs - 1, 1))
        other = tf.minimum(other + tf.cast(other >= doc, tf.int32), num_docs - 1)  # (unused if num_docs == 1)
        first, last = doc_splits[other], doc_splits[other + 1]
        start = first + _randint(seed, counter + 1, 0, last - first)
        # Smallest end sentence such that tokens(start..end) >= target_b, else the document's end.
        ends = tok_splits[start + 1 : last + 1]
        reach = tf.searchsorted(ends, [tok_splits[start] + target_b], side="left")[0]
        end = tf.minimum(start + 1 + tf.cast(reach, tf.int32), last)
        return tok_splits[start], tok_splits[end]

    def body(doc, i, chunk_start, length, target, counter, out):
        first = doc_splits[doc]
        n = doc_splits[doc + 1] - first
        sentence = first + i
        length += tok_splits[sentence + 1] - tok_splits[sentence]

        def emit():
            c = i - chunk_start + 1  # sentences in the chunk
            a_sents = tf.where(c >= 2, _randint(seed, counter, 1, tf.maximum(c, 2)), 1)
            want_random = (_uniform(seed, counter + 1) < 0.5) & (num_docs > 1)
            a_start = tok_splits[first + chunk_start]
            a_end = tok_splits[first + chunk_start + a_sents]
            single = tok_splits[sentence + 1] - tok_splits[sentence]
            # A single-sentence chunk with a true continuation is split inside the sentence.
            split_inside = ~want_random & (c == 1)
            is_random = want_random | (split_inside & (single < 2))
            cut = tok_splits[sentence] + _randint(seed, counter + 2, 1, tf.maximum(single, 2))
            rb_start, rb_end = random_span(doc, counter + 3, target - (a_end - a_start))
            a_end = tf.where(split_inside & ~is_random, cut, a_end)
            b_start = tf.where(is_random, rb_start, a_end)
            b_end = tf.where(is_random, rb_end, tok_splits[sentence + 1])
            # A random B leaves the chunk's unused sentences for the next instance.
            next_i = tf.where(is_random & (c >= 2), chunk_start + a_sents, i + 1)
            row = tf.stack([a_start, a_end, b_start, b_end, tf.cast(is_random, tf.int32)])
            return next_i, out.write(out.size(), row)

        def keep_going():
            return i + 1, out

        done = (i == n - 1) | (length >= target)
        next_i, out = tf.cond(done, emit, keep_going)
        chunk_start = tf.where(done, next_i, chunk_start)
        length = tf.where(done, 0, length)
        # Next document when this one is exhausted.
        new_doc = next_i >= n
        doc = tf.where(new_doc, doc + 1, doc)
        next_i = tf.where(new_doc, 0, next_i)
        chunk_start = tf.where(new_doc, 0, chunk_start)
        counter += 8
        target = tf.where(new_doc, draw_target(counter), target)
        return doc, next_i, chunk_start, length, target, counter + 2, out

    out = tf.TensorArray(tf.int32, size=0, dynamic_size=True, element_shape=[5])
    counter = tf.constant(0, tf.int64)
    state = (tf.constant(0), tf.constant(0), tf.constant(0), tf.constant(0), draw_target(counter), counter + 2, out)
    *_, out = tf.while_loop(lambda doc, *_: doc < num_docs, body, state)
    rows = tf.reshape(out.stack(), [-1, 5])
    return rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3], rows[:, 4]


def truncate_pair(a_len, b_len, max_num_tokens, seed):
    """How many tokens to drop from the front and back of A and B, as the original truncate_seq_pair does.

    The original (create_pretraining_data.py) removes one token at a time from the longer segment (B on ties)
    until the pair fits, each time from the front or the back with probability 0.5. The lengths kept are those
    of the packer's closed form (`truncated_lengths`); the front/back split of each segment's removals is
    Binomial(removed, 0.5).

    Args:
        a_len, b_len: int32 `[I]` segment lengths.
        max_num_tokens: the most tokens in A + B.
        seed: int `[2]` stateless seed.

    Returns:
        (a_front, a_back, b_front, b_back): int32 `[I]` tokens to drop.
    """
    a_keep, b_keep = truncated_lengths(a_len, b_len, max_num_tokens)
    a_drop, b_drop = a_len - a_keep, b_len - b_keep
    seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), 2)
    a_front = tf.cast(
        tf.random.stateless_binomial(tf.shape(a_drop), seeds[0], tf.cast(a_drop, tf.float32), 0.5), tf.int32
    )
    b_front = tf.cast(
        tf.random.stateless_binomial(tf.shape(b_drop), seeds[1], tf.cast(b_drop, tf.float32), 0.5), tf.int32
    )
    return a_front, a_drop - a_front, b_front, b_drop - b_front
