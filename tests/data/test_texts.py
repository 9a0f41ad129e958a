"""read_texts: every line of a .txt file (blank ones too, the last line break starting none), or a column of a
.csv/.tsv/.jsonl file; a value that is not text, a missing column and an empty file are one DataError naming the
file, line or column and the fix."""

import gzip
import logging

import pytest

from keras_bert_lite.data.errors import DataError
from keras_bert_lite.data.texts import read_texts


def test_every_line_of_a_txt_file_is_a_text(tmp_path, caplog):
    path = tmp_path / "corpus.txt"
    path.write_bytes(b"first\r\n\n  \tthird with a tab\nlast\n")
    with caplog.at_level(logging.WARNING):
        texts = read_texts(str(path))
    assert texts.texts == ["first", "", "  \tthird with a tab", "last"] and texts.lines == [1, 2, 3, 4]
    assert "corpus.txt: 1 blank lines (the first: line 2) are embedded as texts" in caplog.text
    (tmp_path / "corpus.txt.gz").write_bytes(gzip.compress(b"one\ntwo"))  # no final line break
    assert read_texts(str(tmp_path / "corpus.txt.gz")).texts == ["one", "two"]


def test_a_line_that_is_not_utf8_is_named_or_skipped(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_bytes(b"fine\ncaf\xe9\nfine again\n")
    with pytest.raises(DataError, match=r"corpus.txt:2: byte 0xe9 is not UTF-8 .*iconv"):
        read_texts(str(path))
    texts = read_texts(str(path), skip_bad_rows=True)
    assert (texts.texts, texts.lines, texts.skipped) == (["fine", "fine again"], [1, 3], 1)


def test_a_column_of_a_table_or_json_lines(tmp_path):
    (tmp_path / "reviews.csv").write_text('id,review\n1,"good, really"\n2,bad\n')
    texts = read_texts(str(tmp_path / "reviews.csv"), column="review")
    assert (texts.texts, texts.lines) == (["good, really", "bad"], [2, 3])
    (tmp_path / "reviews.jsonl").write_text('{"text": "a\\tb\\nc"}\n\n{"text": ""}\n')
    texts = read_texts(str(tmp_path / "reviews.jsonl"))
    assert (texts.texts, texts.lines) == (["a\tb\nc", ""], [1, 3])


@pytest.mark.parametrize(
    "name, content, column, says",
    [
        (
            "in.jsonl",
            '{"text": "fine"}\n{"text": null}\n',
            "text",
            "in.jsonl:2: field 'text' is null, not text; write it as a JSON string (in double quotes).",
        ),
        ("in.jsonl", '{"text": "fine"}\n{"text": [1, 2]}\n', "text", "in.jsonl:2: field 'text' is [1, 2], not text"),
        ("in.jsonl", '{"text": "fine"}\n{"body": "x"}\n', "text", "in.jsonl:2: no field 'text' in this row"),
        (
            "in.csv",
            "review\nfine\n",
            "text",
            "in.csv: no column 'text'; the columns are ['review']. Pass the column "
            "that holds the texts (--text_column).",
        ),
        ("in.txt", "", "text", "in.txt: no texts; pass a file with one text per line (.txt) or per row."),
        ("in.jsonl", "\n\n", "text", "in.jsonl: no texts;"),
        ("in.csv", "text\n", "text", "in.csv: no texts;"),
    ],
)
def test_bad_input_is_one_error_naming_where_and_the_fix(tmp_path, name, content, column, says):
    (tmp_path / name).write_text(content)
    with pytest.raises(DataError) as raised:
        read_texts(str(tmp_path / name), column=column)
    assert str(raised.value).startswith(f"{tmp_path / name}{says[len(name) :]}")
