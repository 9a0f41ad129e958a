"""Compressed files, known by their first bytes rather than their names: which format a file is in, and its
decompressed bytes as a stream.

    compression_of("corpus.txt.gz")     # "gzip"; "" for a file that is not compressed
    with open_decompressed(path) as f:  # gzip, bzip2 and xz are decompressed as they are read
        for line in f: ...
"""

from __future__ import annotations

import bz2
import gzip
import lzma
from typing import BinaryIO

# First bytes -> format. The ones Python can stream are in _OPENERS; the others are only recognised, so that a
# reader can refuse them by name instead of reading their bytes as text.
MAGIC = {
    b"\x1f\x8b": "gzip",
    b"BZh": "bzip2",
    b"\xfd7zXZ\x00": "xz",
    b"\x28\xb5\x2f\xfd": "zstd",
    b"PK\x03\x04": "zip",
    b"7z\xbc\xaf\x27\x1c": "7z",
    b"\x04\x22\x4d\x18": "lz4",
}
_OPENERS = {"gzip": gzip.open, "bzip2": bz2.open, "xz": lzma.open}
_LONGEST_MAGIC = max(map(len, MAGIC))


def compression_of(path: str) -> str:
    """The compression format of the file ("gzip", "bzip2", "xz", "zstd", "zip", "7z", "lz4"), or "" for none.

    Raises:
        OSError: the file cannot be read.
    """
    with open(path, "rb") as f:
        start = f.read(_LONGEST_MAGIC)
    return next((name for magic, name in MAGIC.items() if start.startswith(magic)), "")


def open_decompressed(path: str, compression: str | None = None) -> BinaryIO:
    """The file's bytes as a binary stream, decompressed as they are read when the file is gzip, bzip2 or xz.

    Args:
        path: the file.
        compression: its `compression_of`, when the caller knows it already.

    Raises:
        ValueError: a format only recognised (zstd, zip, 7z, lz4), naming it.
        OSError: the file cannot be read.
    """
    compression = compression_of(path) if compression is None else compression
    if not compression:
        return open(path, "rb")
    if compression not in _OPENERS:
        raise ValueError(f"{path} is {compression}-compressed, which cannot be read as a stream")
    return _OPENERS[compression](path, "rb")
