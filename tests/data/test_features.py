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
