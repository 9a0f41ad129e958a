"""SentencePooling: token vectors -> one vector per text, as sentence-transformers' `Pooling` and `Normalize`
compute it."""

import keras
from keras import ops

POOLING_MODES = ("cls", "max", "mean", "mean_sqrt_len")  # sentence-transformers' order when several are joined


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class SentencePooling(keras.layers.Layer):
    """Pools a sequence of token vectors into one vector, over the real tokens only.

    Modes (sentence-transformers' `pooling_mode_*`):
      * "cls": the first token's vector ([CLS]; not BERT's tanh pooler);
      * "mean": the mean over the real tokens, sum(x * mask) / max(sum(mask), 1e-9);
      * "max": the largest value of each feature over the real tokens (padding counts as -1e9);
      * "mean_sqrt_len": sum(x * mask) / sqrt(max(sum(mask), 1e-9)).
    Several modes are concatenated in the order given. With `normalize`, the result is divided by its L2 norm
    (at least 1e-12), as `Normalize` and `torch.nn.functional.normalize` do.

    Call args:
        sequence: float `[batch, seq, H]`.
        input_mask: int `[batch, seq]`, 1 for real tokens.

    Returns:
        float32 `[batch, H * len(modes)]`.
    """

    def __init__(self, modes=("mean",), normalize=False, **kwargs):
        super().__init__(**kwargs)
        modes = (modes,) if isinstance(modes, str) else tuple(modes)
        unknown = [mode for mode in modes if mode not in POOLING_MODES]
        if not modes or unknown:
            raise ValueError(f"pooling modes must be among {POOLING_MODES}, got {list(modes)}.")
        self.modes = modes
        self.normalize = normalize

    def call(self, sequence, input_mask):
        x = ops.cast(sequence, "float32")
        mask = ops.cast(input_mask, "float32")[:, :, None]  # [b, s, 1]
        count = ops.maximum(ops.sum(mask, axis=1), 1e-9)  # [b, 1]
        total = ops.sum(x * mask, axis=1)  # [b, H]
        pooled = {
            "cls": lambda: x[:, 0],
            "max": lambda: ops.max(x * mask + (mask - 1.0) * 1e9, axis=1),
            "mean": lambda: total / count,
            "mean_sqrt_len": lambda: total / ops.sqrt(count),
        }
        out = ops.concatenate([pooled[mode]() for mode in self.modes], axis=-1)
        if self.normalize:
            out = out / ops.maximum(ops.sqrt(ops.sum(out * out, axis=-1, keepdims=True)), 1e-12)
        return out

    def compute_output_spec(self, sequence, input_mask):
        batch, _, hidden = sequence.shape
        return keras.KerasTensor((batch, None if hidden is None else hidden * len(self.modes)), dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update({"modes": list(self.modes), "normalize": self.normalize})
        return config
