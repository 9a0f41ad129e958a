"""DynamicMasker statistics over >= 100,000 maskable tokens, special tokens, whole words, seeding."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.data.masking import DynamicMasker

PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4
VOCAB = 200
CONTINUATION = [i >= 150 for i in range(VOCAB)]  # ids 150.. are "##" pieces


def packed_batch(batch=512, seq=128, seed=0):
    """[CLS] A [SEP] B [SEP] [PAD]... with random segment lengths; ~1/4 of tokens are ## pieces."""
    rng = np.random.default_rng(seed)
    ids = np.full((batch, seq), PAD, np.int32)
    for row in range(batch):
        total = rng.integers(10, seq - 3)
        a = rng.integers(1, total)
        tokens = rng.integers(5, VOCAB, size=total)
        tokens[0] = rng.integers(5, 150)  # a segment starts with a word start
        ids[row, : total + 3] = [CLS, *tokens[:a], SEP, *tokens[a:], SEP]
    return ids


def masker(**kwargs):
    return DynamicMasker(
        VOCAB, mask_id=MASK, special_ids=[PAD, CLS, SEP, MASK], continuation=CONTINUATION, max_predictions=40, **kwargs
    )


def test_rates_over_100k_maskable_tokens():
    ids = np.concatenate([packed_batch(seed=s) for s in range(4)])
    out = {k: v.numpy() for k, v in masker()(ids, seed=[7, 0]).items()}
    maskable = ~np.isin(ids, [PAD, CLS, SEP, MASK])
    assert maskable.sum() >= 100_000
    weights = out["masked_lm_weights"].astype(bool)
    positions = out["masked_lm_positions"][weights]
    rows = np.nonzero(weights)[0]
    chosen = np.zeros_like(maskable)
    chosen[rows, positions] = True
    assert (chosen <= maskable).all(), "special tokens or padding were chosen"
    fraction = chosen.sum() / maskable.sum()
    assert abs(fraction - 0.15) <= 0.005, fraction
    np.testing.assert_array_equal(out["masked_lm_ids"][weights], ids[rows, positions])
    after = out["input_word_ids"][rows, positions]
    to_mask = np.mean(after == MASK)
    kept = np.mean(after == ids[rows, positions])
    random = 1 - to_mask - kept
    assert abs(to_mask - 0.8) <= 0.01 and abs(kept - 0.1) <= 0.01 and abs(random - 0.1) <= 0.01, (to_mask, kept, random)
    # Outside the chosen positions nothing changes; random replacements are never special tokens.
    np.testing.assert_array_equal(out["input_word_ids"][~chosen], ids[~chosen])
    assert not np.isin(out["input_word_ids"][chosen & (out["input_word_ids"] != MASK)], [PAD, CLS, SEP]).any()
    # Positions are sorted, padded with weight 0, id 0, position 0.
    padded_positions = np.where(weights, out["masked_lm_positions"], 10**6 + np.arange(weights.shape[1]))
    assert (np.diff(padded_positions, axis=1) > 0).all()
    assert (out["masked_lm_ids"][~weights] == 0).all() and (out["masked_lm_positions"][~weights] == 0).all()


def test_whole_word_never_splits_a_word():
    ids = packed_batch(batch=256)
    out = {k: v.numpy() for k, v in masker(whole_word=True)(ids, seed=[3, 4]).items()}
    chosen = np.zeros(ids.shape, bool)
    weights = out["masked_lm_weights"].astype(bool)
    chosen[np.nonzero(weights)[0], out["masked_lm_positions"][weights]] = True
    maskable = ~np.isin(ids, [PAD, CLS, SEP, MASK])
    is_cont = np.asarray(CONTINUATION)[ids] & np.pad(maskable[:, :-1], ((0, 0), (1, 0)))
    # A continuation piece is chosen exactly when the piece before it (same word) is.
    prev_chosen = np.pad(chosen[:, :-1], ((0, 0), (1, 0)))
    assert (chosen[is_cont] == prev_chosen[is_cont]).all()
    assert abs(chosen.sum() / maskable.sum() - 0.15) < 0.02
    assert chosen.sum(1).max() <= 40


def test_same_seed_same_masks_new_seed_new_masks():
    ids = packed_batch(batch=64)
    m = masker()
    a, b, c = m(ids, seed=[1, 2]), m(ids, seed=[1, 2]), m(ids, seed=[1, 3])
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
    assert not np.array_equal(a["masked_lm_positions"], c["masked_lm_positions"])


def test_short_and_empty_sequences():
    ids = np.array([[CLS, 10, SEP, PAD, PAD], [CLS, SEP, SEP, PAD, PAD]], np.int32)
    out = masker()(ids, seed=[0, 0])
    np.testing.assert_array_equal(out["masked_lm_weights"].numpy().sum(1), [1, 0])  # >= 1 if anything maskable
    assert out["masked_lm_positions"].numpy()[0, 0] == 1


def test_whole_word_needs_continuation_table():
    with pytest.raises(ValueError, match="continuation"):
        DynamicMasker(VOCAB, MASK, [PAD], whole_word=True)


def test_graph_mode_gives_the_eager_result():
    ids = packed_batch(batch=8)
    m = masker()
    eager = m(ids, seed=[5, 5])
    compiled = tf.function(lambda x: m(x, seed=[5, 5]))(ids)
    for key in eager:
        np.testing.assert_array_equal(eager[key], compiled[key])
