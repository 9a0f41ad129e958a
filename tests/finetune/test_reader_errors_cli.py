"""Bad input files through the runners' command lines: one line `error: <file>:<line>: ...`, no traceback."""

import json
import subprocess
import sys

import pytest

from keras_bert_lite.runners import glue as run_glue, ner as run_ner, squad as run_squad, swag as run_swag


def flags(tmp_path, vocab):
    return ["--preset", "tiny", "--vocab", vocab, "--model_dir", str(tmp_path / "run"), "--epochs", "1",
            "--batch_size", "8", "--seq_length", "32", "--quiet"]


def error_line(main, argv) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    message = exit_info.value.code
    assert isinstance(message, str) and message.startswith("error: ") and "\n" not in message
    return message


def test_glue_csv_unclosed_quote(tmp_path, uncased_vocab_path):
    train, dev = tmp_path / "train.csv", tmp_path / "dev.csv"
    train.write_text('text,label\ngreat film,"neg\nfine film,pos\nawful,neg\n')
    dev.write_text("text,label\nfine,pos\nbad,neg\n")
    message = error_line(run_glue.main, ["--train_file", str(train), "--dev_file", str(dev),
                                         *flags(tmp_path, uncased_vocab_path)])
    assert message.startswith(f"error: {train}:2: the quote opened on line 2 is never closed")


def test_glue_jsonl_null_label(tmp_path, uncased_vocab_path):
    train, dev = tmp_path / "train.jsonl", tmp_path / "dev.jsonl"
    train.write_text('{"text": "fine", "label": "pos"}\n{"text": "bad", "label": null}\n')
    dev.write_text('{"text": "fine", "label": "pos"}\n')
    message = error_line(run_glue.main, ["--train_file", str(train), "--dev_file", str(dev),
                                         *flags(tmp_path, uncased_vocab_path)])
    assert message.startswith(f"error: {train}:2: the label is missing (null)")


def test_conll_latin1(tmp_path, uncased_vocab_path):
    train, dev = tmp_path / "train.txt", tmp_path / "dev.txt"
    train.write_bytes(b"EU B-ORG\ncaf\xe9 O\n\n")
    dev.write_text("EU B-ORG\n\n")
    message = error_line(run_ner.main, ["--train_file", str(train), "--dev_file", str(dev),
                                        *flags(tmp_path, uncased_vocab_path)])
    assert message.startswith(f"error: {train}:2: byte 0xe9 is not UTF-8") and "iconv -f latin1" in message


def test_swag_label_out_of_range(tmp_path, uncased_vocab_path):
    header = "sent1,sent2,ending0,ending1,ending2,ending3,label\n"
    train, dev = tmp_path / "train.csv", tmp_path / "dev.csv"
    train.write_text(header + "a,b,w,x,y,z,1\na,b,w,x,y,z,1.0\na,b,w,x,y,z,4\n")
    dev.write_text(header + "a,b,w,x,y,z,0\n")
    message = error_line(run_swag.main, ["--train_file", str(train), "--dev_file", str(dev),
                                         *flags(tmp_path, uncased_vocab_path)])
    assert message.startswith(f"error: {train}:4: label '4' is not a choice")


def test_squad_bad_answer_and_skip_bad_rows_reaches_the_reader(tmp_path, uncased_vocab_path):
    train = tmp_path / "train.json"
    train.write_text(json.dumps({"data": [{"paragraphs": [{"context": "abc def", "qas": [
        {"id": "1", "question": "?", "answers": [{"text": "def", "answer_start": 0}]}]}]}]}))
    argv = ["--train_file", str(train), "--predict_file", str(train), *flags(tmp_path, uncased_vocab_path)]
    message = error_line(run_squad.main, argv)
    assert message.startswith(f"error: {train}: data[0].paragraphs[0].qas[0]: answer 'def' is not at answer_start 0")
    # With --skip_bad_rows the one question is skipped, and the file has nothing left.
    assert error_line(run_squad.main, argv + ["--skip_bad_rows"]).startswith(f"error: {train}: no questions found")


def test_the_command_prints_one_line_and_no_traceback(tmp_path, uncased_vocab_path):
    train = tmp_path / "train.csv"
    train.write_bytes(b"text,label\nfine,pos\ncaf\xe9,neg\n")
    command = [sys.executable, "-m", "keras_bert_lite.runners.glue", "--train_file", str(train),
               "--dev_file", str(train), *flags(tmp_path, uncased_vocab_path)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.splitlines()[-1].startswith(f"error: {train}:3: byte 0xe9 is not UTF-8")
