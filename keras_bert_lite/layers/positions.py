"""Gathering the vectors at given positions of each sequence (masked-LM targets, the queries of a last block)."""

from keras import ops


def gather_positions(sequence, positions):
    """`[b, s, H]`, int `[b, P]` -> `[b, P, H]`: the vectors at `positions` of each sequence."""
    return ops.take_along_axis(sequence, ops.expand_dims(ops.cast(positions, "int32"), -1), axis=1)
