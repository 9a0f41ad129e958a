"""Length-grouped training batches: every example once per epoch, less padding, seeded, new order each epoch."""

import numpy as np

from keras_bert_lite.data.features import length_grouped_order


def test_length_grouped_batches_cover_every_example_with_less_padding():
    lengths = np.random.default_rng(0).integers(5, 60, 1200)
    dataset = length_grouped_order(lengths, 32, seed=1)
    epoch_1, epoch_2 = [b.numpy() for b in dataset], [b.numpy() for b in dataset]
    for epoch in (epoch_1, epoch_2):
        assert len(epoch) == 38 and sorted(np.concatenate(epoch).tolist()) == list(range(1200))
    again = [b.numpy() for b in length_grouped_order(lengths, 32, seed=1)]
    assert all(np.array_equal(a, b) for a, b in zip(epoch_1, again))           # same seed: same batches
    assert not all(np.array_equal(a, b) for a, b in zip(epoch_1, epoch_2))     # next epoch: new batches

    def mean_padded(batches):
        return np.mean([-(-lengths[b].max() // 8) * 8 for b in batches])
    random_batches = np.array_split(np.random.default_rng(2).permutation(1200), 38)
    assert mean_padded(epoch_1) < 0.8 * mean_padded(random_batches)


def test_one_endless_iterator_gives_the_same_epochs():
    """What fine-tuning's `fit` iterates (`.repeat()`, ceil(n / batch) steps per epoch): each epoch's batches
    cover every example once, a new order each epoch, the first epoch as a fresh iterator gives it."""
    lengths = np.random.default_rng(0).integers(5, 60, 1000)
    steps = -(-1000 // 32)
    batches = [b.numpy() for b in length_grouped_order(lengths, 32, seed=1).repeat().take(3 * steps)]
    epochs = [batches[i * steps:(i + 1) * steps] for i in range(3)]
    for epoch in epochs:
        assert sorted(np.concatenate(epoch).tolist()) == list(range(1000))
    assert not all(np.array_equal(a, b) for a, b in zip(epochs[0], epochs[1]))
    first = [b.numpy() for b in length_grouped_order(lengths, 32, seed=1)]
    assert all(np.array_equal(a, b) for a, b in zip(epochs[0], first))


def test_packed_dataset_takes_a_python_list_of_labels():
    """A list of labels is one array-like `[n]` (not a structure of n scalars); every example comes once."""
    import tensorflow as tf

    from keras_bert_lite.data.features import packed_dataset
    from keras_bert_lite.text import BertPacker

    segments = (tf.ragged.constant([[5] * n for n in (3, 9, 4, 12, 7)], tf.int32),)
    packer = BertPacker(16, {"cls_id": 1, "sep_id": 2, "pad_id": 0}, dynamic=True)
    batches = list(packed_dataset(segments, [0, 1, 0, 1, 1], packer, 2, shuffle_seed=0))
    tokens = {int(x["input_mask"][i].numpy().sum()) - 2: int(y[i]) for x, y in batches for i in range(len(y))}
    assert tokens == {3: 0, 9: 1, 4: 0, 12: 1, 7: 1}
