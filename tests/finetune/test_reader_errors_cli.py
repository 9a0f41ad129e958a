"""Bad input files through the runners' command lines: one line `error: <file>:<line>: ...`, no traceback."""

import json
import os
import re
import subprocess
import sys

import pytest

from keras_bert_lite.runners import glue as run_glue
from keras_bert_lite.runners import ner as run_ner
from keras_bert_lite.runners import squad as run_squad
from keras_bert_lite.runners import swag as run_swag
from keras_bert_lite.runners import vocab as run_vocab
from keras_bert_lite.text import Vocab


def flags(tmp_path, vocab):
    return [
        "--preset",
        "tiny",
        "--vocab",
        vocab,
        "--model_dir",
        str(tmp_path / "run"),
        "--epochs",
        "1",
        "--batch_size",
        "8",
        "--seq_length",
        "32",
        "--quiet",
    ]


def error_line(main, argv) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    message = exit_info.value.code
    assert isinstance(message, str) and message.startswith("error: ") and "\n" not in message
    return message


def usage_error_line(main, argv, capsys) -> str:
    """The one `error:` line of a command that refuses its flags as argparse does (status 2, nothing run)."""
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert exit_info.value.code == 2 and len(errors) == 1, errors
    return errors[0]


def test_glue_csv_unclosed_quote(tmp_path, uncased_vocab_path):
    train, dev = tmp_path / "train.csv", tmp_path / "dev.csv"
    train.write_text('text,label\ngreat film,"neg\nfine film,pos\nawful,neg\n')
    dev.write_text("text,label\nfine,pos\nbad,neg\n")
    message = error_line(
        run_glue.main, ["--train_file", str(train), "--dev_file", str(dev), *flags(tmp_path, uncased_vocab_path)]
    )
    assert message.startswith(f"error: {train}:2: the quote opened on line 2 is never closed")


def test_glue_jsonl_null_label(tmp_path, uncased_vocab_path):
    train, dev = tmp_path / "train.jsonl", tmp_path / "dev.jsonl"
    train.write_text('{"text": "fine", "label": "pos"}\n{"text": "bad", "label": null}\n')
    dev.write_text('{"text": "fine", "label": "pos"}\n')
    message = error_line(
        run_glue.main, ["--train_file", str(train), "--dev_file", str(dev), *flags(tmp_path, uncased_vocab_path)]
    )
    assert message.startswith(f"error: {train}:2: the label is missing (null)")


def test_conll_latin1(tmp_path, uncased_vocab_path):
    train, dev = tmp_path / "train.txt", tmp_path / "dev.txt"
    train.write_bytes(b"EU B-ORG\ncaf\xe9 O\n\n")
    dev.write_text("EU B-ORG\n\n")
    message = error_line(
        run_ner.main, ["--train_file", str(train), "--dev_file", str(dev), *flags(tmp_path, uncased_vocab_path)]
    )
    assert message.startswith(f"error: {train}:2: byte 0xe9 is not UTF-8") and "iconv -f latin1" in message


def test_swag_label_out_of_range(tmp_path, uncased_vocab_path):
    header = "sent1,sent2,ending0,ending1,ending2,ending3,label\n"
    train, dev = tmp_path / "train.csv", tmp_path / "dev.csv"
    train.write_text(header + "a,b,w,x,y,z,1\na,b,w,x,y,z,1.0\na,b,w,x,y,z,4\n")
    dev.write_text(header + "a,b,w,x,y,z,0\n")
    message = error_line(
        run_swag.main, ["--train_file", str(train), "--dev_file", str(dev), *flags(tmp_path, uncased_vocab_path)]
    )
    assert message.startswith(f"error: {train}:4: label '4' is not a choice")


def test_squad_bad_answer_and_skip_bad_rows_reaches_the_reader(tmp_path, uncased_vocab_path):
    train = tmp_path / "train.json"
    train.write_text(
        json.dumps(
            {
                "data": [
                    {
                        "paragraphs": [
                            {
                                "context": "abc def",
                                "qas": [{"id": "1", "question": "?", "answers": [{"text": "def", "answer_start": 0}]}],
                            }
                        ]
                    }
                ]
            }
        )
    )
    argv = [
        "--train_file",
        str(train),
        "--predict_file",
        str(train),
        *flags(tmp_path, uncased_vocab_path),
        "--max_query_length",
        "8",
    ]
    message = error_line(run_squad.main, argv)
    assert message.startswith(f"error: {train}: data[0].paragraphs[0].qas[0]: answer 'def' is not at answer_start 0")
    # With --skip_bad_rows the one question is skipped, and the file has nothing left.
    assert error_line(run_squad.main, argv + ["--skip_bad_rows"]).startswith(f"error: {train}: no questions found")


def test_the_command_prints_one_line_and_no_traceback(tmp_path, uncased_vocab_path):
    train = tmp_path / "train.csv"
    train.write_bytes(b"text,label\nfine,pos\ncaf\xe9,neg\n")
    command = [
        sys.executable,
        "-m",
        "keras_bert_lite.runners.glue",
        "--train_file",
        str(train),
        "--dev_file",
        str(train),
        *flags(tmp_path, uncased_vocab_path),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.splitlines()[-1].startswith(f"error: {train}:3: byte 0xe9 is not UTF-8")


def _reviews(tmp_path):
    train = tmp_path / "train.csv"
    train.write_text("text,label\ngreat film,pos\nawful film,neg\n")
    return [
        "--train_file",
        str(train),
        "--dev_file",
        str(train),
        "--model_dir",
        str(tmp_path / "run"),
        "--epochs",
        "1",
        "--batch_size",
        "2",
        "--seq_length",
        "16",
        "--quiet",
    ]


def _bad_vocab(tmp_path, uncased_vocab_path, kind):
    tokens = open(uncased_vocab_path, encoding="utf-8").read().split("\n")[:-1]
    path = tmp_path / "vocab" / "vocab.txt"
    path.parent.mkdir()
    if kind in ("latin-1", "BOM, latin-1"):
        path.write_bytes(b"\xef\xbb\xbf" * (kind != "latin-1") + "\n".join(tokens).encode() + b"\ncaf\xe9\n")
    elif kind == "utf-16":
        path.write_text("\n".join(tokens) + "\n", encoding="utf-16")
    elif kind == "duplicate":
        path.write_text("\n".join(tokens + ["the"]) + "\n")
    elif kind == "directory":
        return path.parent
    return path


@pytest.mark.parametrize(
    "kind, problem",
    [
        ("latin-1", r":30523: byte 0xe9 is not UTF-8; re-encode the file as UTF-8"),
        ("BOM, latin-1", r":30523: byte 0xe9 is not UTF-8"),
        ("utf-16", r": is UTF-16 .*iconv -f utf-16"),
        ("duplicate", r": token 'the' appears at ids 1996 and 30522; remove the duplicate"),
        ("directory", r": is a directory; pass a file in it"),
    ],
)
def test_bad_vocabulary_files_are_one_line_errors(tmp_path, uncased_vocab_path, kind, problem):
    path = _bad_vocab(tmp_path, uncased_vocab_path, kind)
    message = error_line(run_glue.main, ["--preset", "tiny", "--vocab", str(path), *_reviews(tmp_path)])
    assert re.match(rf"error: {re.escape(str(path))}{problem}", message), message


def test_a_vocabulary_with_a_utf8_byte_order_mark_reads_as_without(tmp_path, uncased_vocab_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"\xef\xbb\xbf" + open(uncased_vocab_path, "rb").read())
    assert Vocab.from_file(path).tokens == Vocab.from_file(uncased_vocab_path).tokens


def test_bad_model_files_are_one_line_errors(tmp_path, uncased_vocab_path, tiny_init):
    truncated = tmp_path / "truncated" / "encoder.keras"
    truncated.parent.mkdir()
    truncated.write_bytes(open(os.path.join(tiny_init, "encoder.keras"), "rb").read()[:5000])
    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "config.json").write_text(
        json.dumps({"model_type": "bert", "num_hidden_layers": "two", "num_attention_heads": 2, "hidden_size": 32})
    )
    (hf / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}")
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"hidden_size": 32, "num_layers": 2, "num_heads": 2, "colour": "red"}))
    vocab = ["--vocab", uncased_vocab_path]
    for source, problem in (
        (["--init", str(truncated.parent)], f"{truncated}: not a .keras archive"),
        (["--init", str(hf)], f"{hf / 'config.json'}: BertConfig.num_layers must be a positive integer, got 'two'"),
        (["--config", str(config)], f"{config}: unknown BertConfig field(s) ['colour']"),
    ):
        assert error_line(run_glue.main, [*source, *vocab, *_reviews(tmp_path)]).startswith(f"error: {problem}")
    (hf / "config.json").write_text(
        json.dumps(
            {
                "model_type": "bert",
                "num_hidden_layers": 2,
                "num_attention_heads": 2,
                "hidden_size": 32,
                "vocab_size": 30522,
            }
        )
    )
    message = error_line(run_glue.main, ["--init", str(hf), *vocab, *_reviews(tmp_path)])
    assert message.startswith(f"error: {hf / 'model.safetensors'}: not a readable safetensors file")


def test_kbl_vocab_refuses_a_directory_and_a_blank_corpus(tmp_path):
    blank = tmp_path / "blank.txt"
    blank.write_text("\n  \n\n")
    out = ["--output", str(tmp_path / "out" / "vocab.txt"), "--lower_case", "true", "--vocab_size", "50"]
    assert error_line(run_vocab.main, ["--input", str(tmp_path), *out]).startswith(
        f"error: --input {tmp_path}: is a directory"
    )
    assert error_line(run_vocab.main, ["--input", str(blank), *out]).startswith(
        f"error: --input {blank}: no text (every line is blank)"
    )
    assert not (tmp_path / "out").exists()


def test_squad_v2_data_in_a_v1_1_run_is_refused_before_training(tmp_path, uncased_vocab_path):
    """--version left at 1.1 with SQuAD 2.0 files: it trained, then crashed scoring the dev set ('max() arg is an
    empty sequence')."""
    train = tmp_path / "train-v2.0.json"
    train.write_text(
        json.dumps(
            {
                "version": "v2.0",
                "data": [
                    {
                        "paragraphs": [
                            {
                                "context": "abc def",
                                "qas": [
                                    {"id": "1", "question": "?", "answers": [{"text": "def", "answer_start": 4}]},
                                    {"id": "2", "question": "?", "answers": [], "is_impossible": True},
                                ],
                            }
                        ]
                    }
                ],
            }
        )
    )
    argv = [
        "--train_file",
        str(train),
        "--predict_file",
        str(train),
        *flags(tmp_path, uncased_vocab_path),
        "--max_query_length",
        "8",
    ]
    message = error_line(run_squad.main, argv)
    assert (
        message.startswith(f"error: {train}: data[0].paragraphs[0].qas[1]: an unanswerable question")
        and "pass --version 2.0" in message
    )
    assert not (tmp_path / "run" / "metrics.json").exists()


def test_squad_seq_length_without_room_for_the_context_is_one_line(tmp_path, uncased_vocab_path, capsys):
    """--seq_length 32 with the default --max_query_length 64: a ValueError traceback once the files were read;
    now refused with the flags, before the files are read."""
    train = tmp_path / "train.json"
    train.write_text(
        json.dumps(
            {
                "data": [
                    {
                        "paragraphs": [
                            {
                                "context": "abc def",
                                "qas": [{"id": "1", "question": "?", "answers": [{"text": "def", "answer_start": 4}]}],
                            }
                        ]
                    }
                ]
            }
        )
    )
    message = usage_error_line(
        run_squad.main,
        ["--train_file", str(train), "--predict_file", str(train), *flags(tmp_path, uncased_vocab_path)],
        capsys,
    )
    assert message.endswith(
        "error: --seq_length 32 leaves no room for the context after --max_query_length 64 "
        "and 3 special tokens; raise --seq_length or lower --max_query_length."
    )
    assert not (tmp_path / "run").exists()


def test_glue_quoting_flag_reaches_the_reader(tmp_path, uncased_vocab_path, capsys):
    """A plain TSV whose text holds quotes is read as written (the default, auto); --quoting csv reads it quoted,
    and its refusal is one line naming the file and line."""
    train, dev = tmp_path / "train.tsv", tmp_path / "dev.tsv"
    train.write_text('text\tlabel\n"Hi," she said\tpos\nfine\tneg\n')
    dev.write_text("text\tlabel\nfine\tpos\nbad\tneg\n")
    argv = ["--train_file", str(train), "--dev_file", str(dev), *flags(tmp_path, uncased_vocab_path)]
    message = error_line(run_glue.main, argv + ["--quoting", "csv"])
    assert message.startswith(f"error: {train}:2: text follows a closing quote on line 2")
    assert "--quoting is for your own files" in usage_error_line(
        run_glue.main,
        ["--task", "mrpc", "--quoting", "none", "--preset", "tiny", "--model_dir", str(tmp_path / "g")],
        capsys,
    )
