"""The three activations a BertConfig may name."""

import keras


def get_activation(name: str):
    """Returns the activation function for `name`.

    Args:
        name: "gelu" (exact, erf — Hugging Face's "gelu"), "gelu_approx" (tanh form — the original BERT
            code's "gelu") or "relu".
    """
    if name == "gelu":
        return lambda x: keras.activations.gelu(x, approximate=False)
    if name == "gelu_approx":
        return lambda x: keras.activations.gelu(x, approximate=True)
    if name == "relu":
        return keras.activations.relu
    raise ValueError(f"Unknown activation {name!r}; use 'gelu', 'gelu_approx' or 'relu'.")
