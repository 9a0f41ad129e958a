"""Input encodings: bytes that are not UTF-8 are named by file:line with the re-encoding fix (and skippable);
a UTF-8 byte-order mark is dropped, so it never renames the first column."""

import bz2
import gzip
import io
import json
import lzma
import tarfile

import pytest

from keras_bert_lite.data import ner
from keras_bert_lite.data.errors import DataError
from keras_bert_lite.data.squad_json import read_squad_json
from keras_bert_lite.data.table_files import read_records
from keras_bert_lite.utils.errors import InputFileError

BOM = b"\xef\xbb\xbf"
LATIN1 = "café noir".encode("latin-1")  # b"caf\xe9 noir"


@pytest.mark.parametrize(
    "name, content, line",
    [
        ("train.csv", b"text,label\nfine,pos\n" + LATIN1 + b",neg\nok,pos\n", 3),
        ("train.tsv", b"text\tlabel\nfine\tpos\n" + LATIN1 + b"\tneg\nok\tpos\n", 3),
        (
            "train.jsonl",
            b'{"text": "fine", "label": "pos"}\n{"text": "' + LATIN1 + b'", "label": "neg"}\n'
            b'{"text": "ok", "label": "pos"}\n',
            2,
        ),
    ],
)
def test_latin1_bytes_name_file_and_line_and_can_be_skipped(tmp_path, name, content, line):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(
        DataError,
        match=rf"^{path}:{line}: byte 0xe9 is not UTF-8 .*`iconv -f latin1 -t utf-8 {path} > "
        r".*\.utf8\.\w+`; or pass --skip_bad_rows",
    ):
        read_records(str(path))
    records, skipped = read_records(str(path), skip_bad_rows=True)
    assert skipped == 1 and [r.values["text"] for r in records] == ["fine", "ok"]


def test_latin1_bytes_in_a_header_cannot_be_skipped(tmp_path):
    path = tmp_path / "train.csv"
    path.write_bytes(b"t" + b"\xe9" + b"xt,label\nfine,pos\n")
    with pytest.raises(DataError, match=rf"^{path}:1: the header line is malformed: byte 0xe9 is not UTF-8"):
        read_records(str(path), skip_bad_rows=True)


def test_latin1_bytes_in_conll_and_squad(tmp_path):
    conll = tmp_path / "train.txt"
    conll.write_bytes(b"EU B-ORG\n" + LATIN1.split()[0] + b" O\n\nPeter B-PER\n")
    with pytest.raises(DataError, match=rf"^{conll}:2: byte 0xe9 is not UTF-8"):
        ner.read_conll(str(conll))
    assert ner.read_conll(str(conll), skip_bad_rows=True).words == [["EU"], ["Peter"]]
    squad = tmp_path / "train.json"
    qas = [{"id": "a", "question": "Who?", "answers": []}, {"id": "b", "question": "XX", "answers": []}]
    squad.write_bytes(
        json.dumps({"data": [{"paragraphs": [{"context": "c", "qas": qas}]}]}).encode().replace(b"XX", b"\xe9?")
    )
    with pytest.raises(DataError, match=rf"^{squad}: data\[0\].paragraphs\[0\].qas\[1\]: byte 0xe9 is not UTF-8"):
        read_squad_json(str(squad))
    assert [e.qid for e in read_squad_json(str(squad), skip_bad_rows=True)] == ["a"]


def test_a_bom_is_dropped_in_every_format(tmp_path):
    csv_path, jsonl_path = tmp_path / "a.csv", tmp_path / "a.jsonl"
    csv_path.write_bytes(BOM + b"text,label\nfine,pos\n")
    jsonl_path.write_bytes(BOM + b'{"text": "fine", "label": "pos"}\n')
    for path in (csv_path, jsonl_path):
        records, _ = read_records(str(path))
        assert records[0].values == {"text": "fine", "label": "pos"}
    conll = tmp_path / "a.txt"
    conll.write_bytes(BOM + b"EU B-ORG\n")
    assert ner.read_conll(str(conll)).words == [["EU"]]
    squad = tmp_path / "a.json"
    squad.write_bytes(
        BOM
        + json.dumps(
            {
                "data": [
                    {
                        "paragraphs": [
                            {
                                "context": "c",
                                "qas": [{"id": "a", "question": "q", "answers": [{"text": "c", "answer_start": 0}]}],
                            }
                        ]
                    }
                ]
            }
        ).encode()
    )
    assert read_squad_json(str(squad))[0].answers == [("c", 0)]


def test_a_lone_surrogate_from_a_json_escape_is_a_bad_row(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text('{"text": "fine", "label": "pos"}\n{"text": "great \\ud83d", "label": "pos"}\n')
    with pytest.raises(DataError, match=rf"^{path}:2: a lone UTF-16 surrogate \\ud83d .*; or pass --skip_bad_rows"):
        read_records(str(path))
    records, skipped = read_records(str(path), skip_bad_rows=True)
    assert skipped == 1 and [r.values["text"] for r in records] == ["fine"]


def test_utf16_files_get_the_utf16_fix(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text("text\tlabel\nfine\tpos\n", encoding="utf-16")
    with pytest.raises(
        InputFileError,
        match=rf"^{path}: is UTF-16 .*`iconv -f utf-16 -t utf-8 {path} > .*train\.utf8"
        r"\.tsv`",
    ):
        read_records(str(path))


COMPRESS = {"gzip": lambda data: gzip.compress(data, mtime=0), "bzip2": bz2.compress, "xz": lzma.compress}


@pytest.mark.parametrize(
    "name, kind", [("train.csv.gz", "gzip"), ("train.csv", "gzip"), ("train.csv.bz2", "bzip2"), ("train.csv.xz", "xz")]
)
def test_a_compressed_file_is_read_as_the_text_it_holds(tmp_path, name, kind):
    """A gzip file was refused with `gunzip -k FILE`, which fails for a file without a .gz suffix ("unknown suffix
    -- ignored"), and `train.tsv.gz` was an unknown file type."""
    path = tmp_path / name
    path.write_bytes(COMPRESS[kind]("text,label\nfine,pos\n".encode()))
    assert [r.values for r in read_records(str(path))[0]] == [{"text": "fine", "label": "pos"}]


def test_compressed_conll_and_squad_files_are_read(tmp_path):
    conll = tmp_path / "train.txt.gz"
    conll.write_bytes(gzip.compress(b"EU B-ORG\n\nPeter B-PER\n"))
    assert ner.read_conll(str(conll)).words == [["EU"], ["Peter"]]
    squad = tmp_path / "train.json.bz2"
    squad.write_bytes(
        bz2.compress(
            json.dumps(
                {
                    "data": [
                        {
                            "paragraphs": [
                                {
                                    "context": "c",
                                    "qas": [
                                        {"id": "a", "question": "q", "answers": [{"text": "c", "answer_start": 0}]}
                                    ],
                                }
                            ]
                        }
                    ]
                }
            ).encode()
        )
    )
    assert read_squad_json(str(squad))[0].answers == [("c", 0)]


def test_a_damaged_compressed_file_is_named_as_such(tmp_path):
    path = tmp_path / "train.csv.gz"
    path.write_bytes(gzip.compress(b"text,label\n" + b"fine,pos\n" * 100)[:-12])
    with pytest.raises(
        DataError,
        match=rf"^{path}: is gzip-compressed but cannot be decompressed \(.*\): the file is "
        "cut short or damaged; download or compress it again",
    ):
        read_records(str(path))


def test_compressed_utf16_gets_the_utf16_fix(tmp_path):
    path = tmp_path / "train.tsv.gz"
    path.write_bytes(gzip.compress("text\tlabel\nfine\tpos\n".encode("utf-16")))
    with pytest.raises(InputFileError, match=rf"^{path}: is UTF-16"):
        read_records(str(path))


def _tar_of(name: str, data: bytes) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


@pytest.mark.parametrize(
    "content, what",
    [
        (b"PK\x03\x04\x14\x00\x06\x00", r"is a zip archive or an Excel workbook"),
        (
            gzip.compress(_tar_of("train.csv", b"text,label\nfine,pos\n")),
            r"is a tar archive \(extract it: `tar -xf {path}`\)",
        ),
    ],
    ids=["zip", "tar.gz"],
)  # fixed ids: every pytest-xdist worker must collect the same test names
def test_an_archive_is_named_as_such(tmp_path, content, what):
    """A zip file named train.csv was 'not UTF-8 ... re-encode it with iconv -f latin1', which gives garbage."""
    path = tmp_path / "train.csv"
    path.write_bytes(content)
    with pytest.raises(DataError, match=rf"^{path}: {what.format(path=path)}.*, not text; pass the text file it holds"):
        read_records(str(path))


def test_latin1_in_a_compressed_file_gets_a_fix_that_decompresses_it(tmp_path):
    """`iconv -f latin1 train.csv.gz` re-encoded the compressed bytes."""
    path = tmp_path / "train.csv.gz"
    path.write_bytes(gzip.compress(b"text,label\n" + LATIN1 + b",neg\n"))
    with pytest.raises(
        DataError,
        match=rf"^{path}:2: byte 0xe9 is not UTF-8 .*`gzip -dc {path} \| iconv -f latin1 -t "
        rf"utf-8 > {tmp_path}/train\.utf8\.csv`",
    ):
        read_records(str(path))
