"""tokenize_keeping_masks: "[MASK]" is one mask token, the text between tokenised as usual, as Hugging Face's
BertTokenizer reads it (the expected tokens are its own, transformers 5.23, on the fill-mask golden vocabulary)."""

import pytest
import tensorflow as tf

from keras_bert_lite.text import BertTokenizer, Vocab
from keras_bert_lite.text.masked_text import tokenize_keeping_masks
from tests.conftest import GOLDEN_DIR

VOCAB = Vocab.from_file(GOLDEN_DIR / "hf_tiny_masked_lm" / "vocab.txt")
CASES = {  # text -> Hugging Face's tokens
    "The capital of France is [MASK]. HELLO [mask] walking[MASK]ing Straße [MASK][MASK] unbelievably": [
        "the",
        "capital",
        "of",
        "france",
        "is",
        "[MASK]",
        ".",
        "hello",
        "[",
        "mask",
        "]",
        "walk",
        "##ing",
        "[MASK]",
        "in",
        "##g",
        "[UNK]",
        "[MASK]",
        "[MASK]",
        "un",
        "##believ",
        "##ably",
    ],
    "": [],
    "[MASK]": ["[MASK]"],
    "[MASK]a[MASK]": ["[MASK]", "a", "[MASK]"],
    "no mask": ["n", "##o", "mask"],
}


@pytest.mark.parametrize("variant", ["default", "portable"])
def test_each_mask_is_one_token_as_in_hugging_face(variant):
    tokenize = BertTokenizer(VOCAB, variant=variant).tokenize
    traced = tf.function(
        lambda text: tokenize_keeping_masks(tokenize, text, VOCAB), input_signature=[tf.TensorSpec([None], tf.string)]
    )
    ids = traced(tf.constant(list(CASES)))
    assert [[VOCAB.tokens[i] for i in row] for row in ids.to_list()] == list(CASES.values())
    assert ids.dtype == tf.int32 and traced(tf.constant([], tf.string)).to_list() == []
