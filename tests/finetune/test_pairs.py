"""kbl-pairs: an embedder learns paraphrase pairs from scratch; its run directory, pooling settings, batches and
resumption; bad pair files as one error line."""

import csv
import json
import re
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert_lite as kbl
from keras_bert_lite import BertConfig, build_encoder
from keras_bert_lite.data.pairs import read_pairs
from keras_bert_lite.models.inference import dataset_predictor
from keras_bert_lite.runners.pairs import main, parse_args, pooling_settings, run
from keras_bert_lite.runners.tasks.pairs import PairsTask
from keras_bert_lite.sentence_transformers_files import EmbeddingSettings, write_embedding_settings
from keras_bert_lite.text import BertPacker
from keras_bert_lite.utils.files import atomic_save_model
from tests.finetune.conftest import read_tsv, text_pipeline

# A paraphrase code: each colour word has its own animal word. A text is 6 colours in random order, its paraphrase
# the animals of the same colours, shuffled: no token is shared, so an untrained model retrieves by chance.
COLOURS = (
    "red green blue black white brown pink gray gold silver orange purple yellow dark light bright pale deep "
    "warm cold wet dry soft hard"
).split()
ANIMALS = (
    "cat dog horse bird fish mouse lion tiger bear wolf fox deer sheep goat cow pig duck frog snake whale "
    "shark eagle owl crow"
).split()


def paraphrase_rows(n, seed):
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        words = rng.choice(len(COLOURS), 6, replace=False)
        rows.append(
            {
                "text": " ".join(COLOURS[w] for w in words),
                "paraphrase": " ".join(ANIMALS[w] for w in rng.permutation(words)),
            }
        )
    return rows


def write_rows(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return str(path)


@pytest.fixture(scope="module")
def tiny_config_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("config") / "config.json"
    BertConfig(
        vocab_size=30522, hidden_size=32, num_layers=2, num_heads=4, intermediate_size=64, max_position_embeddings=64
    ).to_json(str(path))
    return str(path)


def _flags(init: list, vocab, model_dir, train, dev, *extra):
    """kbl-pairs flags: the encoder's `init` flags, the vocab, the run directory, the files and their columns."""
    return [
        *init,
        "--vocab",
        vocab,
        "--model_dir",
        str(model_dir),
        "--train_file",
        train,
        "--dev_file",
        dev,
        "--anchor",
        "text",
        "--positive",
        "paraphrase",
        *extra,
    ]


def pair_flags(config, vocab, model_dir, train, dev, *extra):
    return _flags(["--config", config], vocab, model_dir, train, dev, "--seq_length", "16", "--quiet", *extra)


def tiny_pair_flags(vocab, model_dir, train, dev, *extra):
    """kbl-pairs flags for a run refused before training: --preset tiny, the anchor/positive columns."""
    return _flags(["--preset", "tiny"], vocab, model_dir, train, dev, *extra)


def untrained_recall(config_path, vocab_path, train, dev):
    """Recall@1 of the embedder kbl-pairs starts from (a new encoder, mean pooling), before any step."""
    vocab, tokenizer = text_pipeline(vocab_path)
    task = PairsTask(
        tokenizer,
        BertPacker(16, vocab, dynamic=True),
        read_pairs(train, anchor="text", positive="paraphrase"),
        read_pairs(dev, anchor="text", positive="paraphrase"),
        settings=EmbeddingSettings(),
        scale=20.0,
        batch_size=32,
    )
    keras.utils.set_random_seed(0)
    return task.evaluate(dataset_predictor(task.build_model(build_encoder(BertConfig.from_json(config_path)))))


def test_paraphrases_are_learnt_from_scratch(tiny_config_file, uncased_vocab_path, tmp_path):
    """Recall@1 among 64 dev paraphrases: chance is 1/64, the untrained model's at most 0.1; trained, at least 0.9."""
    train = write_rows(tmp_path / "train.csv", paraphrase_rows(512, 0))
    dev = write_rows(tmp_path / "dev.csv", paraphrase_rows(64, 1))
    assert untrained_recall(tiny_config_file, uncased_vocab_path, train, dev)["recall_at_1"] <= 0.1
    out = tmp_path / "run"
    summary = run(
        parse_args(
            pair_flags(
                tiny_config_file, uncased_vocab_path, out, train, dev, "--epochs", "2", "--learning_rate", "2e-3"
            )
        )
    )
    history = [epoch["recall_at_1"] for epoch in summary["per_seed"]["0"]["epochs"]]
    assert summary["metrics"]["recall_at_1"] >= 0.9 and summary["metrics"]["recall_at_1"] == max(history), history
    assert json.loads((out / "task.json").read_text()) == {
        "task_type": "embedding",
        "lower_case": True,
        "seq_length": 16,
        "text_fields": ["text"],
    }
    embedder = kbl.load_embedder(str(out))
    assert embedder.get_layer("pooling").modes == ("mean",) and embedder.get_layer("pooling").normalize
    rows = read_tsv(out / "dev_predictions.tsv")
    assert rows[0] == ["id", "rank", "score", "top_id", "top_score", "anchor", "top_positive"] and len(rows) == 65
    assert np.mean([row[1] == "1" for row in rows[1:]]) == summary["metrics"]["recall_at_1"]
    assert all((row[1] == "1") == (row[3] == row[0]) for row in rows[1:])


def test_the_pooling_comes_from_sentence_transformers_files_unless_a_flag_says(tmp_path, minilm_dir, tiny_init):
    def settings(init, *flags):
        return pooling_settings(
            parse_args(
                [
                    "--init",
                    init,
                    "--model_dir",
                    str(tmp_path / "run"),
                    "--train_file",
                    "t.csv",
                    "--dev_file",
                    "d.csv",
                    *flags,
                ]
            )
        )

    assert settings(minilm_dir) == EmbeddingSettings(("mean",), normalize=True)
    st_dir = str(tmp_path / "st")
    kbl.export_hf(kbl.load_encoder(tiny_init), st_dir)
    write_embedding_settings(st_dir, EmbeddingSettings(("cls",), normalize=False), dimension=32)
    assert settings(st_dir) == EmbeddingSettings(("cls",), normalize=False)
    assert settings(st_dir, "--pooling", "max") == EmbeddingSettings(("max",), normalize=False)
    assert settings(st_dir, "--normalize", "true") == EmbeddingSettings(("cls",), normalize=True)
    assert settings(tiny_init) == EmbeddingSettings(("mean",), normalize=True)  # a BERT without such files
    run_dir = tmp_path / "earlier_run"  # an earlier kbl-pairs run's embedder
    atomic_save_model(kbl.build_embedder(kbl.load_encoder(tiny_init), pooling="max"), run_dir / "model.keras")
    assert settings(str(run_dir)) == EmbeddingSettings(("max",), normalize=False)
    assert settings(str(run_dir / "model.keras"), "--normalize", "true") == EmbeddingSettings(("max",), normalize=True)


def test_training_batches_are_whole_interleaved_pairs_and_only_full_ones(uncased_vocab_path, tmp_path):
    """10 pairs in batches of 4: 2 batches an epoch, each 8 rows: anchor, its positive, anchor, ... of 4 pairs."""
    rows = [{"text": f"red {COLOURS[i]}", "paraphrase": f"cat {ANIMALS[i]} {ANIMALS[i]}"} for i in range(10)]
    data = read_pairs(write_rows(tmp_path / "pairs.csv", rows), anchor="text", positive="paraphrase")
    vocab, tokenizer = text_pipeline(uncased_vocab_path)
    task = PairsTask(
        tokenizer,
        BertPacker(16, vocab, dynamic=True),
        data,
        data,
        settings=EmbeddingSettings(),
        scale=20.0,
        batch_size=4,
    )
    assert task.train_size == 8
    epochs = [[], []]
    for step, (inputs, _) in enumerate(task.train_dataset(4, seed=1).take(4)):
        words = [
            [vocab.tokens[i] for i in ids[mask > 0][1:-1]]
            for ids, mask in zip(inputs["input_word_ids"].numpy(), inputs["input_mask"].numpy())
        ]
        pairs = [(COLOURS.index(a[1]), ANIMALS.index(p[1])) for a, p in zip(words[::2], words[1::2])]
        assert len(words) == 8 and all(a == p for a, p in pairs), words
        epochs[step // 2] += [a for a, _ in pairs]
    assert all(len(set(pairs)) == 8 for pairs in epochs) and epochs[0] != epochs[1]


def test_a_run_that_crashed_resumes_and_ends_as_the_uninterrupted_run(
    tiny_config_file, uncased_vocab_path, tmp_path, monkeypatch
):
    """The crash: epoch 2's dev evaluation raises, after its training and before its checkpoint; the same command
    run again continues from epoch 1's checkpoint, with epoch 2's batches."""
    train = write_rows(tmp_path / "train.csv", paraphrase_rows(96, 0))
    dev = write_rows(tmp_path / "dev.csv", paraphrase_rows(16, 1))

    def flags(name):
        return parse_args(
            pair_flags(
                tiny_config_file,
                uncased_vocab_path,
                tmp_path / name,
                train,
                dev,
                "--epochs",
                "2",
                "--learning_rate",
                "2e-3",
                "--batch_size",
                "16",
            )
        )

    straight = run(flags("straight"))
    evaluate, calls = PairsTask.evaluate, []

    def crash_in_epoch_2(task, predict):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("crash")
        return evaluate(task, predict)

    monkeypatch.setattr(PairsTask, "evaluate", crash_in_epoch_2)
    with pytest.raises(RuntimeError, match="crash"):
        run(flags("resumed"))
    monkeypatch.setattr(PairsTask, "evaluate", evaluate)
    resumed = run(flags("resumed"))
    assert resumed["per_seed"]["0"]["epochs"] == straight["per_seed"]["0"]["epochs"]
    ours, theirs = (last_checkpoint(tmp_path / name) for name in ("straight", "resumed"))
    assert ours.keys() == theirs.keys() and len(ours) > 50  # weights and optimizer state, after epoch 2
    for name in ours:
        np.testing.assert_allclose(ours[name], theirs[name], atol=1e-5, err_msg=name)


def last_checkpoint(run_dir):
    """The numeric values of a run's last resume checkpoint (model.keras holds the best epoch, maybe an earlier
    one)."""
    reader = tf.train.load_checkpoint(str(run_dir / "checkpoints"))
    values = {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}
    return {name: value for name, value in values.items() if isinstance(value, np.ndarray) and value.dtype != object}


def error_line(argv):
    with pytest.raises(SystemExit) as raised:
        main(argv)
    message = raised.value.code
    assert isinstance(message, str) and message.startswith("error: ") and "\n" not in message, message
    return message


@pytest.mark.parametrize(
    "name, content, expected",
    [
        (
            "no_column.csv",
            "text,answer\na b,c d\n",
            r"no_column.csv: no column 'paraphrase'; the columns are "
            r"\['answer', 'text'\]\. Pass the right column names \(--anchor",
        ),
        ("empty.csv", "", r"empty.csv: the file is empty; it needs a header line"),
        ("header_only.tsv", "text\tparaphrase\n", r"header_only.tsv: no pairs found; it needs a header line"),
        ("empty.jsonl", "\n", r"empty.jsonl: no pairs found"),
        (
            "blank.jsonl",
            '{"text": "a b", "paraphrase": "c d"}\n{"text": "e", "paraphrase": "  "}\n',
            r"blank.jsonl:2: the 'paraphrase' text is empty; every pair needs two texts: fill it in, delete the row, "
            r"or pass --skip_bad_rows",
        ),
    ],
)
def test_a_bad_pair_file_is_one_error_line(uncased_vocab_path, tmp_path, name, content, expected):
    (tmp_path / name).write_text(content)
    good = write_rows(tmp_path / "good.csv", paraphrase_rows(8, 0))
    for train, dev in ((str(tmp_path / name), good), (good, str(tmp_path / name))):
        message = error_line(tiny_pair_flags(uncased_vocab_path, tmp_path / "run", train, dev, "--batch_size", "4"))
        assert re.search(expected, message), message
        assert not (tmp_path / "run").exists()


def test_blank_pairs_are_skipped_with_skip_bad_rows_and_a_batch_larger_than_the_file_is_refused(
    uncased_vocab_path, tmp_path
):
    (tmp_path / "train.tsv").write_text("text\tparaphrase\na b\tc d\n\tc d\ne f\tg h\n")
    data = read_pairs(str(tmp_path / "train.tsv"), anchor="text", positive="paraphrase", skip_bad_rows=True)
    assert data.anchors == ["a b", "e f"] and data.ids == [0, 2] and data.lines == [2, 4]
    train = str(tmp_path / "train.tsv")
    message = error_line(
        tiny_pair_flags(uncased_vocab_path, tmp_path / "run", train, train, "--skip_bad_rows", "--batch_size", "3")
    )
    assert message == (
        f"error: --batch_size 3: {tmp_path / 'train.tsv'} has 2 pairs, fewer than one batch; pass a "
        "--batch_size of at most that."
    )
    assert not (tmp_path / "run").exists()


PACK_PAIRS = """
import sys
import keras_bert_lite, tensorflow as tf
from keras_bert_lite.data.pairs import InterleavedPacker
from keras_bert_lite.text import BertPacker, Vocab
packer = InterleavedPacker(BertPacker(16, Vocab.from_file(sys.argv[1]), dynamic=True))
anchors, positives = tf.ragged.constant([[5, 6, 7], [8]]), tf.ragged.constant([[9], [10, 11]])
print(packer(anchors, positives)["input_word_ids"].numpy().tolist())
"""


def test_packing_pairs_makes_tensorflow_print_no_error_line(uncased_vocab_path):
    done = subprocess.run(
        [sys.executable, "-c", PACK_PAIRS, uncased_vocab_path], capture_output=True, text=True, timeout=300
    )
    rows = [[101, 5, 6, 7, 102], [101, 9, 102], [101, 8, 102], [101, 10, 11, 102]]  # a0, p0, a1, p1
    assert done.returncode == 0 and json.loads(done.stdout) == [row + [0] * (8 - len(row)) for row in rows], done.stderr
    assert "DT_INT64" not in done.stderr, done.stderr  # oneDNN's line for int64 transposes (a ragged stack)
