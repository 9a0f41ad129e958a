"""Input files as UTF-8 text: a byte-order mark is dropped, and bytes that are not UTF-8 are kept (as the lone
surrogates of Python's "surrogateescape") so that each row holding one is reported, or skipped, on its own line.

A gzip, bzip2 or xz file is decompressed (whole: fine-tuning files are small), known by its first bytes whatever
its name, so `train.tsv.gz` and a gzip file named `train.tsv` both read as the text they hold. An archive of files
(zip, an Excel workbook, tar) is refused: which file in it to read is the user's choice.

    text = read_text("train.csv")               # FileNotFoundError, DataError if the file cannot be read
    problem = undecodable(row_text, "train.csv")   # None, or what is wrong and how to re-encode the file
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import re
import zlib

from keras_bert_lite.data.errors import DataError
from keras_bert_lite.utils.errors import read_input, refuse_utf16, utf8_copy_name

_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # what a JSON "\\ud83d" escape, half of a UTF-16 pair, decodes to
_DECOMPRESS = {".gz": "gzip -dc", ".bz2": "bzip2 -dc", ".xz": "xz -dc"}  # the command that writes the text
COMPRESSED_SUFFIXES = tuple(_DECOMPRESS)  # `train.tsv.gz` is a .tsv file (table_files.file_format)
_COMPRESSED = {  # name: (its first bytes, decompress); bzip2's include a block's or the end's magic number
    "gzip": (re.compile(rb"\x1f\x8b"), gzip.decompress),
    "bzip2": (re.compile(rb"BZh[1-9](?:1AY&SY|\x17rE8P\x90)"), bz2.decompress),
    "xz": (re.compile(rb"\xfd7zXZ\x00"), lzma.decompress),
}
_DAMAGED = (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError)  # what the decompressors raise
_ARCHIVES = {
    0: (b"PK\x03\x04", "a zip archive or an Excel workbook (unzip it, or save the sheet as CSV)"),
    257: (b"ustar", "a tar archive (extract it: `tar -xf FILE`)"),
}  # by the bytes at an offset


def read_text(path: str) -> str:
    """The file's text (UTF-8, a leading BOM dropped, undecodable bytes escaped).

    Raises:
        FileNotFoundError: no such file.
        DataError: a directory, a file that cannot be read, a damaged compressed file, or an archive (zip, .xlsx,
            tar), whose bytes would be reported as another text encoding.
        InputFileError: the file (or the text it decompresses to) is UTF-16.
    """
    data = _decompressed(path, read_input(path, DataError))
    for offset, (magic, what) in _ARCHIVES.items():
        if data.startswith(magic, offset):
            raise DataError(f"{path}: is {what.replace('FILE', path)}, not text; pass the text file it holds.")
    return data.decode("utf-8-sig", errors="surrogateescape")


def _decompressed(path: str, data: bytes) -> bytes:
    """`data` decompressed if it is gzip, bzip2 or xz (known by its first bytes), else `data`.

    Raises:
        DataError: compressed data that is cut short or damaged.
        InputFileError: the decompressed text is UTF-16.
    """
    for name, (magic, decompress) in _COMPRESSED.items():
        if magic.match(data):
            try:
                data = decompress(data)
            except _DAMAGED as error:
                raise DataError(
                    f"{path}: is {name}-compressed but cannot be decompressed ({error}): the file is cut "
                    "short or damaged; download or compress it again."
                ) from None
            refuse_utf16(path, data)
            return data
    return data


def undecodable(text: str, path: str) -> str | None:
    """None if `text` (part of a file read by `read_text`, or a string decoded from its JSON) was valid UTF-8,
    else what is wrong and the fix."""
    match = _ESCAPED_BYTE.search(text)
    if match is None:
        surrogate = _LONE_SURROGATE.search(text)
        if surrogate:
            return (
                f"a lone UTF-16 surrogate \\u{ord(surrogate.group()):04x} (a JSON \\u escape of half a "
                "character, e.g. a cut emoji); complete or remove it"
            )
        return None
    byte = ord(match.group()) - 0xDC00
    return (
        f"byte 0x{byte:02x} is not UTF-8 (the file is in another encoding, e.g. Latin-1 or Windows-1252); "
        f"re-encode the file as UTF-8, e.g. `{_reencoding(path)}`"
    )


def _reencoding(path: str) -> str:
    """The command that writes a UTF-8 copy of the Latin-1 file `path` (decompressing it first if its name says
    it is compressed)."""
    root, ext = os.path.splitext(path)
    if ext.lower() in _DECOMPRESS:
        return f"{_DECOMPRESS[ext.lower()]} {path} | iconv -f latin1 -t utf-8 > {utf8_copy_name(root)}"
    return f"iconv -f latin1 -t utf-8 {path} > {utf8_copy_name(path)}"
