"""`kbl-pretrain --tfds_name` (the documented way to pretrain on Wikipedia) with `tfds.testing.mock_data`: the
run reads the named dataset and split through tensorflow-datasets, splits its articles into sentences, and
trains on NSP pairs made of them."""

from __future__ import annotations

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from tests.training import probes


def mock_articles(count=24, seed=0):
    """Wikipedia-like texts: two paragraphs (a blank line between) of 2-3 sentences of 3-4 words of the test
    vocabulary, ended by . ! or ?. Returns the texts and, per article, its sentences as token lists and the
    indices of its sentences that begin a paragraph."""
    rng = np.random.default_rng(seed)
    texts, articles = [], []
    for _ in range(count):
        paragraphs, sentences, paragraph_starts = [], [], []
        for _ in range(2):
            paragraph_starts.append(len(sentences))
            line = []
            for _ in range(rng.integers(2, 4)):
                words = [str(w) for w in rng.choice(probes.WORDS, size=rng.integers(3, 5))]
                end = str(rng.choice([".", "!", "?"]))
                line.append(" ".join(words).capitalize() + end)
                sentences.append(words + [end])
            paragraphs.append(" ".join(line))
        texts.append("\n\n".join(paragraphs))
        articles.append((sentences, paragraph_starts))
    return texts, articles


def test_pretrain_on_a_tfds_dataset(monkeypatch, tmp_path):
    texts, articles = mock_articles()
    reads = []

    def as_dataset(builder, split, decoders=None, read_config=None, shuffle_files=False, **kwargs):
        reads.append((builder.name, builder.builder_config.name, str(split), shuffle_files))
        return tf.data.Dataset.from_tensor_slices({"text": texts, "title": [f"t{i}" for i in range(len(texts))]})

    trainers = probes.install_probe(monkeypatch)
    with tfds.testing.mock_data(as_dataset_fn=as_dataset):
        history = probes.pretrain(
            probes.run_args(
                None,
                probes.write_vocab(tmp_path),
                probes.write_config(tmp_path),
                str(tmp_path / "run"),
                tfds_name="wikipedia/20230601.en",
                tfds_split="train[:80%]",
                seq_length=64,
                batch_size=8,
                steps=4,
                short_seq_prob=0.0,
            )
        )
    assert reads and set(reads) == {("wikipedia", "20230601.en", "train[:80%]", True)}
    assert [h["step"] for h in history] == [4] and np.isfinite(history[0]["mlm_loss"])

    # Every consumed pair is made of the articles' sentences: A starts at a sentence of some article (no pair
    # needs truncating: an article has at most 30 tokens), B follows A in that article (IsNext) or comes from
    # another article (NotNext).
    index = {token: i for i, token in enumerate(probes.TOKENS)}
    tokens = [np.array([index[t] for s in sentences for t in s]) for sentences, _ in articles]
    starts = [np.cumsum([0] + [len(s) for s in sentences])[:-1] for sentences, _ in articles]
    paragraph_starts = [set(start[p] for p in ps) for start, (_, ps) in zip(starts, articles)]

    def find(segment):
        """(article, token offset) of every occurrence of `segment` in the articles."""
        return [
            (a, o)
            for a, article in enumerate(tokens)
            for o in range(len(article) - len(segment) + 1)
            if np.array_equal(article[o : o + len(segment)], segment)
        ]

    batch = probes.stack_batches(trainers[-1].batches)
    ids = probes.unmasked_ids(batch)
    sep = probes.TOKENS.index("[SEP]")
    mid_paragraph = 0
    for row, label in zip(ids, batch["next_sentence_labels"]):
        first_sep, second_sep = np.nonzero(row == sep)[0][:2]
        a, b = row[1:first_sep], row[first_sep + 1 : second_sep]
        places = [(art, o) for art, o in find(a) if o in set(starts[art])]
        assert places, f"segment A {[probes.TOKENS[i] for i in a]} does not start a sentence of any article"
        if label == 0:
            assert any(np.array_equal(tokens[art][o + len(a) : o + len(a) + len(b)], b) for art, o in places)
        else:
            assert any(art2 != art for art, _ in places for art2, _ in find(b))
        mid_paragraph += all(o not in paragraph_starts[art] for art, o in places)
    # Articles were split into sentences (after . ! ?), not only into paragraphs: some A segments start inside a
    # paragraph (a paragraph-level split starts every A at a paragraph).
    assert mid_paragraph >= 3, mid_paragraph
