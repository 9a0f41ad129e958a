"""Our WordPiece learner returns exactly the vocabulary of tf_text's (the peer that tf_text's bert_vocab tool and
KerasHub's compute_word_piece_vocabulary run), for the settings kbl-vocab uses and for the edges of each filter."""

import collections
import random

import pytest
from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as tf_text_learner

from keras_bert_lite.text import SPECIAL_TOKENS
from keras_bert_lite.text.vocab_trainer import count_words
from keras_bert_lite.text.wordpiece_learner import learn


def _random_words(seed: int, alphabet: str, words: int = 600) -> list[tuple[str, int]]:
    """Word counts over a small alphabet (shared pieces at every length); some words spelt with the joiner."""
    rng = random.Random(seed)
    counts = collections.Counter()
    for _ in range(words):
        word = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
        counts["##" + word if rng.random() < 0.05 else word] += rng.randint(1, 30)
    return sorted(counts.items())


SETTINGS = {
    "kbl-vocab": dict(vocab_size=200, lower_thresh=2, max_unique_chars=2000),
    "filters": dict(vocab_size=500, lower_thresh=1, max_unique_chars=5, max_token_length=8, max_input_tokens=200),
    "one iteration": dict(vocab_size=100, num_iterations=1, lower_thresh=3),
    "no iteration": dict(vocab_size=300, num_iterations=0),
    "unbounded search": dict(vocab_size=400, upper_thresh=None, lower_thresh=None),
}


@pytest.mark.parametrize("alphabet", ["abcd", "abcdeé#x東"])
@pytest.mark.parametrize("setting", SETTINGS)
def test_the_same_vocabulary_as_tf_text(alphabet, setting):
    word_counts = _random_words(len(alphabet), alphabet)
    kwargs = dict(reserved_tokens=SPECIAL_TOKENS, **SETTINGS[setting])
    assert learn(word_counts, **kwargs) == tf_text_learner.learn(word_counts, **kwargs)


def test_the_same_vocabulary_as_tf_text_on_real_text(pydoc_corpus):
    """English prose and code from the Python docs, as kbl-vocab counts it."""
    _, documents = pydoc_corpus
    word_counts = sorted(count_words((line for doc in documents[:150] for line in doc), lower_case=False).items())
    kwargs = dict(vocab_size=800, reserved_tokens=SPECIAL_TOKENS, lower_thresh=2, max_unique_chars=2000)
    ours = learn(word_counts, **kwargs)
    assert ours == tf_text_learner.learn(word_counts, **kwargs)
    assert abs(len(ours) - 800) < 80 and "##ing" in ours and "Python" in ours
