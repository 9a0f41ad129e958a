"""kbl-embed: all-MiniLM-L6-v2's vectors of the golden texts (a .jsonl: they hold an empty and a blank text, tabs
and line breaks) equal sentence-transformers' to 1e-5, in .npy and .jsonl, from the console script; overrides
rebuild the embedder; bad input is one error line naming the file, line or flag, and nothing is written."""

import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest

from keras_bert_lite.runners import embed
from keras_bert_lite.text import BertPacker, BertTokenizer, Vocab
from tests.conftest import GOLDEN_DIR

TINY = str(GOLDEN_DIR / "hf_tiny_masked_lm")  # L2 H32, 64 positions, 120 tokens


def test_the_command_gives_sentence_transformers_vectors(tmp_path, minilm_dir):
    golden = np.load(GOLDEN_DIR / "minilm_embeddings.npz")
    texts = [str(text) for text in golden["texts"]]
    source = tmp_path / "texts.jsonl"
    source.write_text("".join(json.dumps({"id": i, "text": text}) + "\n" for i, text in enumerate(texts)))
    out = tmp_path / "new" / "dir"  # created
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}  # TensorFlow's noise filtered
    done = subprocess.run(
        [
            os.path.join(os.path.dirname(sys.executable), "kbl-embed"),
            "--model",
            minilm_dir,
            "--input",
            str(source),
            "--output",
            str(out / "v.npy"),
            str(out / "v.jsonl"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    vectors = np.load(out / "v.npy")
    assert vectors.dtype == np.float32 and np.abs(vectors - golden["embeddings"]).max() <= 1e-5
    rows = [json.loads(line) for line in (out / "v.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [row["text"] for row in rows] == texts and [row["line"] for row in rows] == list(range(1, 81))
    np.testing.assert_array_equal(np.array([row["embedding"] for row in rows], np.float32), vectors)  # exact
    assert "embedded 80 texts (2 cut to 256 tokens)" in done.stdout
    assert f"{source}:79: this text and 1 more are longer than --seq_length 256 tokens" in done.stderr
    assert "Traceback" not in done.stderr and "cuInit" not in done.stderr


def tiny_vectors(texts, pooling="mean", layers=(-1,), normalize=False):
    import keras_bert_lite as kbl

    vocab = Vocab.from_file(f"{TINY}/vocab.txt")
    model = kbl.build_embedder(kbl.load_encoder(TINY), pooling=pooling, layers=layers, normalize=normalize)
    return model(BertPacker(64, vocab, dynamic=True)(BertTokenizer(vocab).tokenize(texts))).numpy()


def test_a_txt_file_with_overrides(tmp_path, capsys, caplog):
    texts = ["the cat sat on the mat", "", "paris is big", "she was walking"]
    (tmp_path / "in.txt").write_text("\n".join(texts) + "\n")
    with caplog.at_level(logging.INFO):
        embed.main(
            [
                "--model",
                TINY,
                "--input",
                str(tmp_path / "in.txt"),
                "--output",
                str(tmp_path / "v.npy"),
                "--batch_size",
                "2",
            ]
        )
    np.testing.assert_allclose(np.load(tmp_path / "v.npy"), tiny_vectors(texts), atol=1e-5)
    assert "embedded 2 of 4 texts" in caplog.text and "embedded 4 of 4 texts" in caplog.text  # not a terminal
    embed.main(
        [
            "--model",
            TINY,
            "--input",
            str(tmp_path / "in.txt"),
            "--output",
            str(tmp_path / "v.npy"),
            "--pooling",
            "cls",
            "--normalize",
            "true",
            "--layers=-2,-1",
        ]
    )
    np.testing.assert_allclose(np.load(tmp_path / "v.npy"), tiny_vectors(texts, "cls", (-2, -1), True), atol=1e-5)
    assert "embedded 4 texts (0 cut to 64 tokens)" in capsys.readouterr().out


def error_of(argv, capsys):
    """The one error line `kbl-embed argv` exits with (a usage error or a run-time one)."""
    with pytest.raises(SystemExit) as raised:
        embed.main(argv)
    code, err = raised.value.code, capsys.readouterr().err
    lines = [line for line in (err + (code if isinstance(code, str) else "")).splitlines() if "error:" in line]
    assert code not in (0, None) and "Traceback" not in err and len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize(
    "name, content, flags, says",
    [
        (
            "in.jsonl",
            '{"text": "fine"}\n{"text": 7}\n',
            [],
            "in.jsonl:2: field 'text' is 7, not text; write it as a JSON string",
        ),
        ("in.jsonl", '{"text": "fine"}\n{"text": null}\n', [], "in.jsonl:2: field 'text' is null, not text"),
        ("in.txt", "", [], "in.txt: no texts; pass a file with one text per line"),
        (
            "in.csv",
            "review\nfine\n",
            [],
            "in.csv: no column 'text'; the columns are ['review']. Pass the column that "
            "holds the texts (--text_column).",
        ),
        ("in.jsonl", '{"body": "fine"}\n', ["--text_column", "review"], "in.jsonl: no column 'review'"),
        ("in.txt", "fine\n", ["--text_column", "review"], "--text_column is for a .tsv/.csv/.jsonl --input"),
        ("in.txt", "fine\n", ["--seq_length", "65"], "--seq_length 65 is longer than the 64 positions of the model"),
        ("in.txt", "fine\n", ["--layers", "3"], "--layers 3: layers must index the encoder's 2 blocks"),
        ("in.txt", "fine\n", ["--pooling", "sum"], "argument --pooling: invalid choice: 'sum'"),
    ],
)
def test_bad_input_is_one_error_line_and_nothing_is_written(tmp_path, capsys, name, content, flags, says):
    (tmp_path / name).write_text(content)
    out = tmp_path / "out"
    line = error_of(["--model", TINY, "--input", str(tmp_path / name), "--output", str(out / "v.npy"), *flags], capsys)
    assert says in line, line
    assert not out.exists()


def test_outputs_that_cannot_be_written_are_refused_before_any_work(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(embed, "read_texts", lambda *a: pytest.fail("the input was read"))
    (tmp_path / "a_file").write_text("")
    (tmp_path / "in.txt").write_text("fine\n")
    argv = ["--model", TINY, "--input", str(tmp_path / "in.txt"), "--output"]
    assert "--output v.csv: give a file ending in .npy" in error_of([*argv, "v.npy", "v.csv"], capsys)
    (tmp_path / "d.npy").mkdir()
    assert f"{tmp_path / 'd.npy'}: is a directory; name a file in it" in error_of(
        [*argv, str(tmp_path / "d.npy")], capsys
    )
    assert f"{tmp_path / 'a_file'} is a file, not a directory" in error_of(
        [*argv, str(tmp_path / "a_file" / "v.npy")], capsys
    )
    (tmp_path / "in.jsonl").write_text('{"text": "fine"}\n')
    assert f"--output {tmp_path / 'in.jsonl'}: is the --input file" in error_of(
        ["--model", TINY, "--input", str(tmp_path / "in.jsonl"), "--output", str(tmp_path / "in.jsonl")], capsys
    )
    assert (tmp_path / "in.jsonl").read_text() == '{"text": "fine"}\n'


def test_a_model_without_a_vocabulary_is_refused_before_it_loads(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(embed, "load_embedder", lambda *a: pytest.fail("the model was loaded"))
    (tmp_path / "in.txt").write_text("fine\n")
    line = error_of(
        [
            "--model",
            str(GOLDEN_DIR / "hf_tiny_pretraining"),
            "--input",
            str(tmp_path / "in.txt"),
            "--output",
            str(tmp_path / "v.npy"),
        ],
        capsys,
    )
    assert line == (
        "error: --vocab is required: no vocab.txt or tokenizer.json beside --model. Build one with "
        "kbl-vocab, or pass the one the model was trained with."
    )
