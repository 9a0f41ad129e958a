"""Input files as UTF-8 text: a byte-order mark is dropped, and bytes that are not UTF-8 are kept (as the lone
surrogates of Python's "surrogateescape") so that each row holding one is reported, or skipped, on its own line.

    text = read_text("train.csv")               # DataError if the file cannot be read
    problem = undecodable(row_text, "train.csv")   # None, or what is wrong and how to re-encode the file
"""

from __future__ import annotations

import os
import re

from keras_bert_lite.data.errors import DataError

_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


def read_text(path: str) -> str:
    """The file's text (UTF-8, a leading BOM dropped, undecodable bytes escaped).

    Raises:
        DataError: the file is missing or cannot be read.
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise DataError(f"{path}: no such file.") from None
    except OSError as error:
        raise DataError(f"{path}: cannot be read ({error.strerror or error}); pass a readable file.") from None
    return data.decode("utf-8-sig", errors="surrogateescape")


def undecodable(text: str, path: str) -> str | None:
    """None if `text` (part of a file read by `read_text`) was valid UTF-8, else what is wrong and the fix."""
    match = _ESCAPED_BYTE.search(text)
    if match is None:
        return None
    byte = ord(match.group()) - 0xDC00
    root, ext = os.path.splitext(path)
    return (f"byte 0x{byte:02x} is not UTF-8 (the file is in another encoding, e.g. Latin-1 or Windows-1252); "
            f"re-encode the file as UTF-8, e.g. `iconv -f latin1 -t utf-8 {path} > {root}.utf8{ext}`")
