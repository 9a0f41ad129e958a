"""`fill_mask`: the most probable tokens for each `[MASK]` in texts, from a model's masked-LM head: the tokens and
probabilities of Hugging Face's `pipeline("fill-mask")` on the same weights.

    import keras_bert_lite as kbl
    kbl.fill_mask("runs/pretrain", ["Paris is the [MASK] of France."], top_k=3)
    # [[MaskFill(position=4, tokens=('capital', ...), token_ids=(3007, ...), scores=(0.93, ...))]]

Command line: `kbl-fill-mask`; served: `kbl-export --task_type fill_mask` (the `fill_mask` signature). (The module
is not named fill_mask: the package exports the function under that name.)
"""

from __future__ import annotations

import typing

import keras
import numpy as np
import tensorflow as tf

from keras_bert_lite import artifacts
from keras_bert_lite.checkpoints import load_masked_lm
from keras_bert_lite.models import BertPretrainer
from keras_bert_lite.models.introspect import max_positions
from keras_bert_lite.models.masked_predictions import masked_token_predictions
from keras_bert_lite.text import BertPacker, BertTokenizer, Vocab
from keras_bert_lite.text.masked_text import tokenize_keeping_masks
from keras_bert_lite.utils.bounds import check_argument

MASK = "[MASK]"


class MaskFill(typing.NamedTuple):
    """The predictions for one `[MASK]` of a text.

    Attributes:
        position: where the mask is in the packed sequence ([CLS] is 0).
        tokens: the `top_k` most probable tokens, most probable first, as the vocabulary spells them (a word piece
            keeps its "##").
        token_ids: their ids.
        scores: their probabilities (softmax over the vocabulary).
    """

    position: int
    tokens: tuple[str, ...]
    token_ids: tuple[int, ...]
    scores: tuple[float, ...]


def fill_mask(
    model_or_path,
    texts,
    top_k: int = artifacts.DEFAULT_TOP_K,
    *,
    vocab: Vocab | str | None = None,
    lower_case: bool | None = None,
    batch_size: int = 32,
):
    """The `top_k` most probable tokens for each `[MASK]` in `texts`.

    Each text is tokenised with "[MASK]" (exactly so: "[mask]" is text) kept as the mask token, as Hugging Face's
    tokenizers keep it (`text.masked_text`), packed as `[CLS] text [SEP]`, and every mask predicted in one pass.

    Args:
        model_or_path: a `BertPretrainer`, or anything `load_masked_lm` reads: a pretraining run directory, a
            Hugging Face BertForPreTraining or BertForMaskedLM directory or Hub name, an original TF1 checkpoint.
        texts: a list of str, each with at least one "[MASK]"; or one str.
        top_k: tokens per mask, 1 to the vocabulary's size.
        vocab: a `Vocab` or a vocab.txt / tokenizer.json path; default: the one beside `model_or_path` (a path).
        lower_case: overrides the vocabulary's casing; one that contradicts a recorded casing is refused.
        batch_size: texts per model call.

    Returns:
        Per text, a list with a `MaskFill` per "[MASK]" in order; for one str, its list alone.

    Raises:
        ValueError: a text without "[MASK]" or too long for the model (naming it), `top_k` or `batch_size` out of
            range, no vocabulary, or one that does not fit the model.
        CheckpointMismatchError: a checkpoint without a masked-LM head (`load_masked_lm`).
    """
    if isinstance(texts, str):
        return fill_mask(model_or_path, [texts], top_k, vocab=vocab, lower_case=lower_case, batch_size=batch_size)[0]
    texts = list(texts)
    check_argument("top_k", top_k, minimum=1)
    check_argument("batch_size", batch_size, minimum=1)
    pretrainer, vocab = masked_lm_and_vocab(model_or_path, vocab)
    check_argument("top_k", top_k, maximum=len(vocab))
    if not texts:
        return []
    ids = tokenize_keeping_masks(
        BertTokenizer(vocab, lower_case=lower_case).tokenize, tf.constant(texts, tf.string), vocab
    )
    positions = max_positions(pretrainer.encoder)
    check_texts(texts, ids.row_lengths().numpy(), _mask_counts(ids, vocab), positions)
    packer = BertPacker(positions, vocab=vocab, dynamic=True)
    fills = []
    for start in range(0, len(texts), batch_size):
        out = masked_token_predictions(pretrainer, packer(ids[start : start + batch_size]), vocab.mask_id, top_k)
        fills += _mask_fills(out, vocab)
    return fills


def masked_lm_and_vocab(model_or_path, vocab: Vocab | str | None) -> tuple[BertPretrainer, Vocab]:
    """The pretrainer (`load_masked_lm` for a path) and its vocabulary (`vocab`, else the one beside the path).

    Raises:
        TypeError: a model that is no `BertPretrainer`.
        ValueError: no vocabulary, or one whose size does not fit the model's embedding table.
    """
    pretrainer = model_or_path if isinstance(model_or_path, keras.Model) else load_masked_lm(model_or_path)
    if not isinstance(pretrainer, BertPretrainer):
        raise TypeError(
            f"fill_mask needs a BertPretrainer (a masked-LM head); got {type(pretrainer).__name__} "
            f"{pretrainer.name!r}: pass a checkpoint with one, or kbl.load_masked_lm(path)."
        )
    return pretrainer, artifacts.vocab_for(model_or_path, vocab, pretrainer.get_layer("masked_lm").vocab_size)


def check_texts(texts: list[str], lengths, mask_counts, positions: int) -> None:
    """Refuses a text without a mask or with more tokens than the model's positions leave (naming the first).

    Args:
        texts: the texts.
        lengths: tokens per text, [CLS] and [SEP] not counted.
        mask_counts: mask tokens per text.
        positions: the model's positions (max_position_embeddings).

    Raises:
        ValueError: "texts[i] '...': ..." with the fix.
    """
    for i, (text, length, masks) in enumerate(zip(texts, lengths, mask_counts)):
        if not masks:
            raise ValueError(f"texts[{i}] {_shown(text)} holds no {MASK}: put {MASK} where a token is to be predicted.")
        if length > positions - 2:
            raise ValueError(
                f"texts[{i}] {_shown(text)} has {length} tokens, more than the {positions - 2} the "
                f"model's {positions} positions leave beside [CLS] and [SEP]: shorten it."
            )


def _mask_counts(ids: tf.RaggedTensor, vocab: Vocab) -> np.ndarray:
    return tf.reduce_sum(tf.cast(tf.equal(ids, vocab.mask_id), tf.int32), axis=1).numpy()


def _mask_fills(out: dict, vocab: Vocab) -> list[list[MaskFill]]:
    """`masked_token_predictions`' dense outputs as a list of `MaskFill`s per row (padding dropped)."""
    ids, scores, positions = (out[k].numpy() for k in ("token_ids", "scores", "mask_positions"))
    return [
        [
            MaskFill(
                int(p),
                tuple(vocab.tokens[t] for t in ids[row, m]),
                tuple(int(t) for t in ids[row, m]),
                tuple(float(s) for s in scores[row, m]),
            )
            for m, p in enumerate(positions[row])
            if p >= 0
        ]
        for row in range(len(positions))
    ]


def _shown(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")
