"""Length-grouped training batches: every example once per epoch, less padding, seeded, new order each epoch."""

import numpy as np

from keras_bert_lite.data.features import length_grouped_order


def epochs_of(dataset, num_epochs, steps):
    batches = [b.numpy() for b in dataset.take(num_epochs * steps)]
    return [batches[i * steps : (i + 1) * steps] for i in range(num_epochs)]


def same(a, b):
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


def test_length_grouped_batches_cover_every_example_with_less_padding():
    lengths = np.random.default_rng(0).integers(5, 60, 1200)
    epoch_1, epoch_2 = epochs_of(length_grouped_order(lengths, 32, seed=1), 2, 38)
    for epoch in (epoch_1, epoch_2):
        assert sorted(np.concatenate(epoch).tolist()) == list(range(1200))
    assert same(epoch_1, epochs_of(length_grouped_order(lengths, 32, seed=1), 1, 38)[0])  # same seed: same
    assert not same(epoch_1, epoch_2)  # next epoch: new
    assert not same(epoch_1, epochs_of(length_grouped_order(lengths, 32, seed=2), 1, 38)[0])

    def mean_padded(batches):
        return np.mean([-(-lengths[b].max() // 8) * 8 for b in batches])

    random_batches = np.array_split(np.random.default_rng(2).permutation(1200), 38)
    assert mean_padded(epoch_1) < 0.8 * mean_padded(random_batches)


def test_a_run_started_at_a_later_epoch_sees_the_same_batches():
    """What a resumed fine-tuning run relies on: epoch e's batches do not depend on the epochs before it
    (1000 examples, batch 32: the last batch of each epoch holds 8, and no batch straddles two epochs)."""
    lengths = np.random.default_rng(0).integers(5, 60, 1000)
    steps = -(-1000 // 32)
    epochs = epochs_of(length_grouped_order(lengths, 32, seed=1), 3, steps)
    for epoch in epochs:
        assert sorted(np.concatenate(epoch).tolist()) == list(range(1000))
        assert sorted(len(b) for b in epoch)[0] == 1000 % 32
    resumed = epochs_of(length_grouped_order(lengths, 32, seed=1, first_epoch=2), 1, steps)[0]
    assert same(resumed, epochs[2])


def test_packed_dataset_takes_a_python_list_of_labels():
    """A list of labels is one array-like `[n]` (not a structure of n scalars); every example comes once."""
    import tensorflow as tf

    from keras_bert_lite.data.features import packed_dataset
    from keras_bert_lite.text import BertPacker

    segments = (tf.ragged.constant([[5] * n for n in (3, 9, 4, 12, 7)], tf.int32),)
    packer = BertPacker(16, {"cls_id": 1, "sep_id": 2, "pad_id": 0}, dynamic=True)
    batches = list(packed_dataset(segments, [0, 1, 0, 1, 1], packer, 2, shuffle_seed=0).take(3))  # one epoch
    tokens = {int(x["input_mask"][i].numpy().sum()) - 2: int(y[i]) for x, y in batches for i in range(len(y))}
    assert tokens == {3: 0, 9: 1, 4: 0, 12: 1, 7: 1}
