"""NSP instances: label balance, B's document, truncation identical to the original truncate_seq_pair."""

import random

import numpy as np
import tensorflow as tf

from keras_bert_lite.data.instances import nsp_spans, truncate_pair


def synthetic_window(num_docs=200, seed=0):
    """Documents of 1..25 sentences of 1..40 tokens; token value = its global position (so spans are checkable)."""
    rng = np.random.default_rng(seed)
    docs, doc_of_token, next_token = [], [], 0
    for d in range(num_docs):
        sentences = []
        for _ in range(rng.integers(1, 26)):
            n = int(rng.integers(1, 41))
            sentences.append(list(range(next_token, next_token + n)))
            next_token += n
            doc_of_token += [d] * n
        docs.append(sentences)
    return tf.ragged.constant(docs, dtype=tf.int32), np.array(doc_of_token)


def test_balance_documents_and_spans():
    window, doc_of = synthetic_window()
    spans = tf.function(lambda w, s: nsp_spans(w, s, max_num_tokens=125))
    labels, count = [], 0
    for seed in range(8):
        a0, a1, b0, b1, r = (x.numpy() for x in spans(window, tf.constant([seed, 1])))
        assert (a1 > a0).all() and (b1 > b0).all()
        for i in range(len(r)):
            a_doc, b_doc = doc_of[a0[i]], doc_of[b0[i]]
            assert doc_of[a1[i] - 1] == a_doc and doc_of[b1[i] - 1] == b_doc  # spans stay in one document
            if r[i]:
                assert b_doc != a_doc, "a random B came from A's document"
            else:
                assert b_doc == a_doc and b0[i] == a1[i], "a true B must continue A"
        labels += r.tolist()
        count += len(r)
    assert count > 2000
    assert abs(np.mean(labels) - 0.5) <= 0.02, np.mean(labels)


def test_same_seed_same_instances():
    window, _ = synthetic_window(num_docs=20)
    first = [x.numpy() for x in nsp_spans(window, tf.constant([3, 3]), 61)]
    again = [x.numpy() for x in nsp_spans(window, tf.constant([3, 3]), 61)]
    other = [x.numpy() for x in nsp_spans(window, tf.constant([3, 4]), 61)]
    for x, y in zip(first, again):
        np.testing.assert_array_equal(x, y)
    assert any(len(x) != len(y) or (x != y).any() for x, y in zip(first, other))


def original_truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng):
    """google-research/bert create_pretraining_data.truncate_seq_pair, verbatim logic."""
    while True:
        total_length = len(tokens_a) + len(tokens_b)
        if total_length <= max_num_tokens:
            break
        trunc_tokens = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        assert len(trunc_tokens) >= 1
        if rng.random() < 0.5:
            del trunc_tokens[0]
        else:
            trunc_tokens.pop()


def test_truncation_lengths_equal_the_original():
    rng = random.Random(0)
    a_len = np.array([rng.randint(1, 200) for _ in range(2000)], np.int32)
    b_len = np.array([rng.randint(1, 200) for _ in range(2000)], np.int32)
    a_front, a_back, b_front, b_back = (x.numpy() for x in truncate_pair(a_len, b_len, 125, tf.constant([1, 2])))
    for i in range(len(a_len)):
        a, b = list(range(a_len[i])), list(range(b_len[i]))
        original_truncate_seq_pair(a, b, 125, rng)
        assert (a_len[i] - a_front[i] - a_back[i], b_len[i] - b_front[i] - b_back[i]) == (len(a), len(b))
    removed_a = a_front + a_back
    assert (a_front >= 0).all() and (a_back >= 0).all()
    # Front/back split is fair: about half of the removed tokens come from the front.
    assert abs(a_front.sum() / removed_a.sum() - 0.5) < 0.02
