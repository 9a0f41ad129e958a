"""CSV quoting: a quote that never closes is named by the line where it opened, and only that row is lost."""

import pytest

from keras_bert_lite.data.csv_rows import csv_rows
from keras_bert_lite.data.errors import DataError
from keras_bert_lite.data.records import read_records

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
    assert [(line, problem[:28]) for line, _, problem in csv_rows(text) if problem] == \
        [(3, "the quote opened on line 3 i")]
    assert list(csv_rows(text))[-1] == (4, ["three", "y", "z"], "")


def test_text_after_a_closing_quote_is_malformed_and_reading_goes_on():
    rows = list(csv_rows('t,l\n"a "b" c",pos\nok,neg\n'))
    assert rows[1][:2] == (2, None) and rows[1][2].startswith("text follows a closing quote on line 2")
    assert rows[2] == (3, ["ok", "neg"], "")


def test_a_quoted_field_that_closes_may_hold_line_breaks():
    assert list(csv_rows('t,l\n"first line\nsecond, line",pos\nok,neg\n')) == [
        (1, ["t", "l"], ""), (2, ["first line\nsecond, line", "pos"], ""), (4, ["ok", "neg"], "")]


def test_without_quoting_quotes_are_text():
    assert list(csv_rows('t\tl\n"open\tpos\n', delimiter="\t", quoting=False))[1] == (2, ['"open', "pos"], "")


def test_read_records_reports_the_unclosed_quote_or_skips_only_its_line(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text(UNCLOSED)
    with pytest.raises(DataError, match=rf"^{path}:2: the quote opened on line 2 is never closed.*--skip_bad_rows"):
        read_records(str(path))
    records, skipped = read_records(str(path), skip_bad_rows=True)
    assert skipped == 1 and [(r.line, r.values["label"]) for r in records] == [(3, "pos"), (4, "neg"), (5, "pos")]
