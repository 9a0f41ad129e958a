"""Input files as UTF-8 text: a byte-order mark is dropped, and bytes that are not UTF-8 are kept (as the lone
surrogates of Python's "surrogateescape") so that each row holding one is reported, or skipped, on its own line.

    text = read_text("train.csv")               # FileNotFoundError, DataError if the file cannot be read
    problem = undecodable(row_text, "train.csv")   # None, or what is wrong and how to re-encode the file
"""

from __future__ import annotations

import re

from keras_bert_lite.data.errors import DataError
from keras_bert_lite.utils.errors import read_input, utf8_copy_name

_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")   # what a JSON "\\ud83d" escape, half of a UTF-16 pair, decodes to
_ARCHIVES = {b"\x1f\x8b": "gzip-compressed (decompress it: `gunzip -k FILE`)",      # by their first bytes
             b"PK\x03\x04": "a zip archive or an Excel workbook (unzip it, or save the sheet as CSV)"}


def read_text(path: str) -> str:
    """The file's text (UTF-8, a leading BOM dropped, undecodable bytes escaped).

    Raises:
        FileNotFoundError: no such file.
        DataError: a directory, a file that cannot be read, or a compressed file (gzip, zip, .xlsx), whose bytes
            would be reported as another text encoding.
        InputFileError: the file is UTF-16.
    """
    data = read_input(path, DataError)
    for magic, what in _ARCHIVES.items():
        if data.startswith(magic):
            raise DataError(f"{path}: is {what.replace('FILE', path)}, not text; pass the text file it holds.")
    return data.decode("utf-8-sig", errors="surrogateescape")


def undecodable(text: str, path: str) -> str | None:
    """None if `text` (part of a file read by `read_text`, or a string decoded from its JSON) was valid UTF-8,
    else what is wrong and the fix."""
    match = _ESCAPED_BYTE.search(text)
    if match is None:
        surrogate = _LONE_SURROGATE.search(text)
        if surrogate:
            return (f"a lone UTF-16 surrogate \\u{ord(surrogate.group()):04x} (a JSON \\u escape of half a "
                    "character, e.g. a cut emoji); complete or remove it")
        return None
    byte = ord(match.group()) - 0xDC00
    return (f"byte 0x{byte:02x} is not UTF-8 (the file is in another encoding, e.g. Latin-1 or Windows-1252); "
            f"re-encode the file as UTF-8, e.g. `iconv -f latin1 -t utf-8 {path} > {utf8_copy_name(path)}`")
