"""The pretraining pipeline on real text (the Python docs) with the real uncased vocab."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.data.errors import DataError
from keras_bert_lite.data.masking import DynamicMasker
from keras_bert_lite.data.pretraining import expand_patterns, pretraining_dataset, split_documents, text_file_documents
from keras_bert_lite.text import BertPacker, BertTokenizer, Vocab


@pytest.fixture(scope="module")
def text_stack(uncased_vocab_path):
    vocab = Vocab.from_file(uncased_vocab_path)
    return vocab, BertTokenizer(vocab, lower_case=True), BertPacker(128, vocab=vocab)


def make_dataset(text_stack, path, seed=0, **kwargs):
    vocab, tokenizer, packer = text_stack
    masker = DynamicMasker.from_vocab(vocab, max_predictions=20)
    return pretraining_dataset(
        text_file_documents(path, seed=seed),
        tokenizer,
        packer,
        masker,
        seed=seed,
        window_docs=kwargs.pop("window_docs", 32),
        shuffle_buffer=500,
        **kwargs,
    )


def take(dataset, n):
    features, labels = next(iter(dataset.batch(n)))
    return {k: v.numpy() for k, v in features.items()}, {k: v.numpy() for k, v in labels.items()}


def test_split_documents_on_blank_lines():
    text = tf.constant("a one.\nb two.\n\n  \n\nc three.\r\n\r\nd four.\n")
    np.testing.assert_array_equal(split_documents(text).numpy(), [b"a one.\nb two.", b"c three.", b"d four."])


def test_missing_input_is_named(tmp_path):
    with pytest.raises(DataError, match=r"nothing-here\*.txt: no input file matches"):
        expand_patterns(str(tmp_path / "nothing-here*.txt"))


def test_a_file_whose_name_has_glob_characters_is_that_file(tmp_path):
    for name in ("wiki[2024].txt", "a.txt", "b.txt"):
        (tmp_path / name).write_text("x\n")
    assert expand_patterns(f"{tmp_path}/wiki[2024].txt,{tmp_path}/[ab].txt") == [
        f"{tmp_path}/a.txt",
        f"{tmp_path}/b.txt",
        f"{tmp_path}/wiki[2024].txt",
    ]


def test_examples_on_real_text(text_stack, pydoc_corpus):
    vocab, _, _ = text_stack
    features, labels = take(make_dataset(text_stack, pydoc_corpus[0]), 2000)
    ids, mask, types = features["input_word_ids"], features["input_mask"], features["input_type_ids"]
    assert ids.shape == (2000, 128) and labels["masked_lm_ids"].shape == (2000, 20)
    # [CLS] A [SEP] B [SEP]: segment ids 0 then 1, padding after.
    assert (ids[:, 0] == vocab.cls_id).all()
    lengths = mask.sum(1)
    assert (ids[np.arange(2000), lengths - 1] == vocab.sep_id).all()
    assert ((ids == vocab.sep_id).sum(1) == 2).all()
    assert (ids[mask == 0] == vocab.pad_id).all() and (types[mask == 0] == 0).all()
    # NSP labels balanced.
    assert abs(labels["next_sentence_labels"].mean() - 0.5) <= 0.02, labels["next_sentence_labels"].mean()
    # Masking: ~15% of the maskable tokens, never special tokens or padding, 80/10/10.
    weights = labels["masked_lm_weights"].astype(bool)
    rows = np.nonzero(weights)[0]
    positions = features["masked_lm_positions"][weights]
    original = labels["masked_lm_ids"][weights]
    assert not np.isin(original, [vocab.cls_id, vocab.sep_id, vocab.pad_id]).any()
    maskable = (mask == 1).sum() - 3 * len(ids)
    assert maskable > 100_000
    assert abs(weights.sum() / maskable - 0.15) <= 0.005
    replaced = ids[rows, positions]
    assert abs(np.mean(replaced == vocab.mask_id) - 0.8) <= 0.01
    assert abs(np.mean(replaced == original) - 0.1) <= 0.01


def test_same_seed_same_batches_other_seed_other_batches(text_stack, pydoc_corpus):
    a, b = take(make_dataset(text_stack, pydoc_corpus[0]), 64), take(make_dataset(text_stack, pydoc_corpus[0]), 64)
    c = take(make_dataset(text_stack, pydoc_corpus[0], seed=1), 64)
    for key in a[0]:
        np.testing.assert_array_equal(a[0][key], b[0][key])
    assert not np.array_equal(a[0]["input_word_ids"], c[0]["input_word_ids"])


def test_each_pass_over_the_data_draws_new_masks(text_stack, tmp_path, pydoc_corpus):
    # Two-sentence documents and no short targets: a true-continuation pair is identical in every pass, so
    # repeats of the same unmasked pair can be compared; their masks must differ.
    documents = [doc[:2] for doc in pydoc_corpus[1] if len(doc) >= 2][:40]
    path = tmp_path / "two.txt"
    path.write_text("\n\n".join("\n".join(d) for d in documents) + "\n")
    features, labels = take(make_dataset(text_stack, str(path), short_seq_prob=0.0, window_docs=8), 600)
    unmasked = features["input_word_ids"].copy()
    weights = labels["masked_lm_weights"].astype(bool)
    rows, cols = np.nonzero(weights)
    unmasked[rows, features["masked_lm_positions"][weights]] = labels["masked_lm_ids"][weights]
    seen, repeats, same_mask = {}, 0, 0
    for i in range(len(unmasked)):
        if labels["next_sentence_labels"][i]:
            continue
        key = unmasked[i].tobytes()
        if key in seen:
            repeats += 1
            same_mask += np.array_equal(features["masked_lm_positions"][seen[key]], features["masked_lm_positions"][i])
        seen[key] = i
    assert repeats >= 50
    assert same_mask / repeats < 0.1, (same_mask, repeats)
