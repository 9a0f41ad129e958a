"""CSV quoting: a quote that never closes is named by the line where it opened, and only that row is lost; and
other ways a user's file goes wrong: a column named twice, a repeated header line, a JSON array for JSON Lines,
another separator than the extension's; ids that number the file's rows across a skipped one."""

import re

import pytest

from keras_bert_lite.data.csv_rows import csv_rows, tsv_text
from keras_bert_lite.data.errors import DataError
from keras_bert_lite.data.sentences import read_sentence_file
from keras_bert_lite.data.swag import read_swag_csv
from keras_bert_lite.data.table_files import read_records, select_columns

# The file: the label quote on line 2 swallowed lines 3-5 into one label 'neg\nfine film,pos\n...'.
UNCLOSED = 'text,label\ngreat film,"neg\nfine film,pos\nawful,neg\nok film,pos\n'


def test_an_unclosed_quote_names_its_line_and_the_rows_after_it_are_kept():
    rows = list(csv_rows(UNCLOSED))
    assert rows[0] == (1, ["text", "label"], "")
    line, fields, problem = rows[1]
    assert (line, fields) == (2, None) and "the quote opened on line 2 is never closed" in problem
    assert rows[2:] == [(3, ["fine film", "pos"], ""), (4, ["awful", "neg"], ""), (5, ["ok film", "pos"], "")]


def test_the_opening_line_counts_the_lines_of_earlier_quoted_fields():
    # Row 2 spans lines 2-3 (a closed multi-line field), then opens a quote on line 3 that never closes.
    text = 'a,b,c\n"one\ntwo",x,"open\nthree,y,z\n'
    assert [(line, problem[:28]) for line, _, problem in csv_rows(text) if problem] == [
        (3, "the quote opened on line 3 i")
    ]
    assert list(csv_rows(text))[-1] == (4, ["three", "y", "z"], "")


def test_text_after_a_closing_quote_is_malformed_and_reading_goes_on():
    rows = list(csv_rows('t,l\n"a "b" c",pos\nok,neg\n'))
    assert rows[1][:2] == (2, None) and rows[1][2].startswith("text follows a closing quote on line 2")
    assert rows[2] == (3, ["ok", "neg"], "")


def test_a_quoted_field_that_closes_may_hold_line_breaks():
    assert list(csv_rows('t,l\n"first line\nsecond, line",pos\nok,neg\n')) == [
        (1, ["t", "l"], ""),
        (2, ["first line\nsecond, line", "pos"], ""),
        (4, ["ok", "neg"], ""),
    ]


def test_without_quoting_quotes_are_text():
    assert list(csv_rows('t\tl\n"open\tpos\n', delimiter="\t", quoting=False))[1] == (2, ['"open', "pos"], "")


def test_read_records_reports_the_unclosed_quote_or_skips_only_its_line(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text(UNCLOSED)
    with pytest.raises(DataError, match=rf"^{path}:2: the quote opened on line 2 is never closed.*--skip_bad_rows"):
        read_records(str(path))
    records, skipped = read_records(str(path), skip_bad_rows=True)
    assert skipped == 1 and [(r.line, r.values["label"]) for r in records] == [(3, "pos"), (4, "neg"), (5, "pos")]


def test_a_header_naming_a_column_twice_is_refused(tmp_path):
    """Each row kept only the last of the two fields: --text_a text read 'other', silently."""
    path = tmp_path / "train.csv"
    path.write_text("text,label,text\nhi,1,other\n")
    with pytest.raises(
        DataError,
        match=rf"^{path}:1: the header line is malformed: column 'text' is named twice "
        r"\(columns 1 and 3\)",
    ):
        read_records(str(path))
    path.write_text("text,label,,\nhi,1,,\n")  # blank names from trailing commas may repeat
    assert read_records(str(path))[0][0].values["text"] == "hi"


@pytest.mark.parametrize(
    "name, text, copy",
    [
        ("train.json", '[{"text": "hi", "label": 1}, {"text": "yo", "label": 0}]\n', "train.jsonl"),
        ("train.jsonl", '[\n  {"text": "hi", "label": 1},\n  {"text": "yo", "label": 0}\n]\n', "train.lines.jsonl"),
    ],
)
def test_a_json_array_file_is_told_to_become_json_lines(tmp_path, name, text, copy):
    """It was 'line 1: a JSON list, not an object', or 'not valid JSON' for each line of a pretty-printed array."""
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(
        DataError,
        match=rf"^{path}: is one JSON array, not JSON Lines .*`jq -c '\.\[\]' {path} > "
        rf"{tmp_path}/{copy}`\.$",
    ):
        read_records(str(path), skip_bad_rows=True)


@pytest.mark.parametrize("joined", ["text,label\n", "\ufefftext,label\n"])
def test_a_repeated_header_line_is_a_malformed_row(tmp_path, joined):
    """Two files joined with their headers (cat a.csv b.csv) made the header row an example of a class 'label'."""
    path = tmp_path / "train.csv"
    path.write_text("text,label\nfine,pos\n" + joined + "awful,neg\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"^{path}:3: this row repeats the header line .*--skip_bad_rows"):
        read_records(str(path))
    records, skipped = read_records(str(path), skip_bad_rows=True)
    assert skipped == 1 and [r.values["label"] for r in records] == ["pos", "neg"]


@pytest.mark.parametrize(
    "name, text, separator",
    [
        ("train.csv", "text;label\nfine;pos\n", ";"),  # a European spreadsheet's CSV
        ("train.txt", "text,label\nfine,pos\n", ","),  # .txt is read as TSV
        ("train.csv", "text\tlabel\nfine\tpos\n", "\t"),
    ],
)
def test_a_file_separated_otherwise_than_its_extension_says_is_told_so(tmp_path, name, text, separator):
    """The error told users to pass the right column name, which no name could be."""
    path = tmp_path / name
    path.write_text(text)
    records, _ = read_records(str(path))
    holding = re.escape(repr(separator))
    with pytest.raises(
        DataError,
        match=rf"no column 'text'; .* The header is one column holding {holding}: the file "
        r"is not separated as its extension says",
    ):
        select_columns(records, str(path), ["text", "label"])


@pytest.mark.parametrize(
    "name, text",
    [
        ("test.csv", 'text,label\nfine,pos\n"open,neg\nawful,neg\n\nok,pos\n'),  # a quote never closed
        ("dev.tsv", "text\tlabel\nfine\tpos\nbad\t\nawful\tneg\n\nok\tpos\n"),  # a row without a label
        (
            "test.jsonl",
            '{"text": "fine", "label": "pos"}\n{"text": \n{"text": "awful", "label": "neg"}\n\n'
            '{"text": "ok", "label": "pos"}\n',
        ),
    ],
)
def test_ids_number_the_file_s_rows_across_a_skipped_one(tmp_path, name, text):
    """Without --id_column the prediction files' ids numbered the kept examples: after a row skipped with
    --skip_bad_rows, each prediction carried the id of the row before it (predictions hold no text)."""
    path = tmp_path / name
    path.write_text(text)
    data = read_sentence_file(str(path), text_a="text", label="label", skip_bad_rows=True)
    assert (data.text_a, data.ids, data.skipped) == (["fine", "awful", "ok"], [0, 2, 3], 1)


def test_swag_ids_number_the_file_s_rows_across_a_skipped_one(tmp_path):
    path = tmp_path / "test.csv"
    path.write_text("sent1,sent2,ending0,ending1,ending2,ending3\na,b,w,x,y,z\na,b,w,x\na,b,w,x,y,z\n")
    assert read_swag_csv(str(path), labeled=False, skip_bad_rows=True).ids == [0, 2]


def test_a_jsonl_key_given_twice_is_a_malformed_row(tmp_path):
    """`{"text": ..., "label": 1, "label": 0}` kept the last label, silently (as a CSV header naming a column
    twice would)."""
    path = tmp_path / "train.jsonl"
    path.write_text('{"text": "fine", "label": 1}\n{"text": "awful", "label": 1, "label": 0}\n')
    with pytest.raises(DataError, match=rf"^{path}:2: key 'label' appears twice in one object.*--skip_bad_rows"):
        read_records(str(path))
    records, skipped = read_records(str(path), skip_bad_rows=True)
    assert skipped == 1 and [r.values for r in records] == [{"text": "fine", "label": 1}]


# A plain TSV (GLUE's files, `cut`, `paste`): one record per line, quotes are text. Line 2's text opens a quote
# that line 4's ("5'10\"") closes: read as CSV, lines 2-4 were one example with line 4's label, silently.
PLAIN_TSV = 'text\tlabel\n"Hi there\tpos\nfine\tneg\nhe is 5\'10"\tpos\n"Hi," she said\tneg\n'


def test_a_plain_tsv_with_quotes_is_read_one_record_per_line(tmp_path):
    """CSV quoting refused line 5 ('text follows a closing quote') and joined lines 2-4."""
    path = tmp_path / "train.tsv"
    path.write_text(PLAIN_TSV)
    records, skipped = read_records(str(path))
    assert skipped == 0 and [(r.line, r.values["text"], r.values["label"]) for r in records] == [
        (2, '"Hi there', "pos"),
        (3, "fine", "neg"),
        (4, "he is 5'10\"", "pos"),
        (5, '"Hi," she said', "neg"),
    ]
    assert read_records(str(path), quoting="none")[0] == records


def test_quoting_csv_reads_a_tsv_quoted_and_names_what_it_refuses(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text(PLAIN_TSV)
    with pytest.raises(DataError, match=rf"^{path}:5: text follows a closing quote on line 5; .*--skip_bad_rows"):
        read_records(str(path), quoting="csv")


def test_a_quoted_field_that_spans_lines_is_named_in_a_warning(tmp_path, caplog):
    """The joined rows were one example without a word; now the warning names where."""
    path = tmp_path / "train.tsv"
    path.write_text(PLAIN_TSV.replace('"Hi," she said', "ok"))
    records, _ = read_records(str(path), quoting="csv")
    assert [(r.line, r.values["label"]) for r in records] == [(2, "pos"), (5, "neg")]
    assert f"{path}:2: a quoted field runs from line 2 to line 4 and is read as one field" in caplog.text
    assert "--quoting none" in caplog.text


def test_a_quoted_tsv_is_read_quoted(tmp_path, caplog):
    """What spreadsheets, pandas and our prediction files write (`tsv_text`): a field with a quote, a tab or a
    line break is quoted. Read plain, its quotes stayed in the text and its line break made two malformed rows."""
    rows = [["text", "label"], ['He said "hi"', "pos"], ["a\ttab", "neg"], ["two\nlines", "pos"], ["plain", "neg"]]
    path = tmp_path / "train.tsv"
    path.write_text(tsv_text(rows))
    records, skipped = read_records(str(path))
    assert skipped == 0 and [list(r.values.values()) for r in records] == rows[1:]
    assert f"{path}:4: a quoted field runs from line 4 to line 5" in caplog.text
    path.write_text(tsv_text(rows[:3]))  # quotes on single lines only: read quoted, nothing to warn of
    assert [r.values["text"] for r in read_records(str(path))[0]] == ['He said "hi"', "a\ttab"]


def test_auto_reads_a_csv_file_quoted_and_none_reads_its_quotes_as_text(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text('text,label\n"a, b",pos\n')
    assert read_records(str(path))[0][0].values == {"text": "a, b", "label": "pos"}
    path.write_text('text,label\n"Hi" she said,pos\n')
    assert read_records(str(path), quoting="none")[0][0].values == {"text": '"Hi" she said', "label": "pos"}


def test_an_unknown_quoting_is_refused(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text("text\tlabel\n")
    with pytest.raises(ValueError, match=r"quoting='tsv': use one of \('auto', 'csv', 'none'\)"):
        read_records(str(path), quoting="tsv")
