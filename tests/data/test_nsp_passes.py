"""Every pass over the documents draws new next-sentence pairs (which sentences make A and B, and IsNext or
NotNext), as the README and data/pretraining.py claim; the same seed draws the same ones again."""

from __future__ import annotations

import numpy as np
import pytest

from keras_bert_lite.data.masking import DynamicMasker
from keras_bert_lite.data.pretraining import pretraining_dataset, text_file_documents
from keras_bert_lite.text import BertPacker, BertTokenizer, Vocab

WORDS = (
    "time year people way day man thing woman life child world school state family student group country "
    "problem hand part place case week company system program question work government number night point "
    "home water room mother area money story fact month lot right study book eye job word business issue "
    "side kind head house service friend father power hour game line end member law car city community "
    "name president team minute idea kid body information back parent face others level office door health "
    "person art war history party result change morning reason research girl guy moment air teacher force"
).split()
DOCS, EXAMPLES = 8, 80


@pytest.fixture(scope="module")
def setup(uncased_vocab_path, tmp_path_factory):
    """Eight documents of 3-5 distinct sentences (at most 30 tokens each: no pair is ever truncated) in a file."""
    rng = np.random.default_rng(0)
    documents = [
        [" ".join(rng.choice(WORDS, size=rng.integers(3, 6), replace=False)) + "." for _ in range(rng.integers(3, 6))]
        for _ in range(DOCS)
    ]
    path = tmp_path_factory.mktemp("nsp") / "docs.txt"
    path.write_text("\n\n".join("\n".join(doc) for doc in documents) + "\n")
    vocab = Vocab.from_file(uncased_vocab_path)
    tokenizer = BertTokenizer(vocab, lower_case=True)
    sentences = [[tuple(tokenizer.tokenize([s]).to_list()[0]) for s in doc] for doc in documents]
    assert len({s for doc in sentences for s in doc}) == sum(map(len, sentences))
    return str(path), vocab, tokenizer, sentences


def examples(setup, seed):
    """The first EXAMPLES examples of one document window per pass (window_docs = the documents), unshuffled."""
    path, vocab, tokenizer, _ = setup
    dataset = pretraining_dataset(
        text_file_documents(path, seed=seed),
        tokenizer,
        BertPacker(128, vocab=vocab),
        DynamicMasker.from_vocab(vocab, max_predictions=20),
        short_seq_prob=0.0,
        window_docs=DOCS,
        shuffle_buffer=1,
        seed=seed,
    )
    features, labels = next(iter(dataset.batch(EXAMPLES)))
    return {**{k: v.numpy() for k, v in features.items()}, **{k: v.numpy() for k, v in labels.items()}}


def pairs_by_pass(batch, vocab, sentences):
    """The (A, B, label) pairs, unmasked, cut into passes: a pass starts with the pair whose A begins with the first
    sentence of the first document (only the first chunk of that document starts there)."""
    ids = batch["input_word_ids"].copy()
    rows, slots = np.nonzero(batch["masked_lm_weights"])
    ids[rows, batch["masked_lm_positions"][rows, slots]] = batch["masked_lm_ids"][rows, slots]
    first = sentences[0][0]
    passes = []
    for row, label in zip(ids, batch["next_sentence_labels"]):
        seps = np.nonzero(row == vocab.sep_id)[0]
        a, b = tuple(row[1 : seps[0]].tolist()), tuple(row[seps[0] + 1 : seps[1]].tolist())
        if a[: len(first)] == first:
            passes.append([])
        if passes:
            passes[-1].append((a, b, int(label)))
    return passes[:-1]  # the last one may be cut off by EXAMPLES


def test_every_pass_draws_new_pairs_and_the_seed_repeats_them(setup):
    _, vocab, _, sentences = setup
    batch = examples(setup, seed=3)
    passes = pairs_by_pass(batch, vocab, sentences)
    assert len(passes) >= 3, [len(p) for p in passes]
    for pairs in passes:
        # Each pass is over the same documents: every document's first sentence starts an A segment once.
        a_starts = [a for a, _, _ in pairs]
        for doc in sentences:
            assert sum(a[: len(doc[0])] == doc[0] for a in a_starts) == 1
    for previous, current in zip(passes, passes[1:]):
        assert previous != current
        assert [label for *_, label in previous] != [label for *_, label in current]
        new = sum(pair not in previous for pair in current) / len(current)
        assert new >= 0.6, new  # most pairs are new (some true continuations recur by chance)
    # The same seed draws the same pairs (and masks) again.
    again = examples(setup, seed=3)
    for key in batch:
        np.testing.assert_array_equal(batch[key], again[key], err_msg=key)
