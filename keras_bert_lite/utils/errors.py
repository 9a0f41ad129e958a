"""`InputFileError`, the exception for a file the user named that cannot be used as it is, and `read_utf8`, which
reads a small such file (a vocabulary, a config) with it.

Commands report it as one line (`runners.errors`); `DataError` (bad rows of a data file) is one kind of it.
"""

from __future__ import annotations

import os


class InputFileError(ValueError):
    """A file the user named is malformed, of the wrong kind or in conflict with another; the message names the
    file (and its line or field) and the fix."""


def refuse_utf16(path: str, data: bytes) -> None:
    """Raises `InputFileError` if `data`, the start of the file `path`, has a UTF-16 byte-order mark (Excel's
    "Unicode Text", Windows tools), with the command that re-encodes it as UTF-8."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise InputFileError(
            f"{path}: is UTF-16 (it starts with a UTF-16 byte-order mark); re-encode it as UTF-8, "
            f"e.g. `iconv -f utf-16 -t utf-8 {path} > {utf8_copy_name(path)}`."
        )


def read_input(path: str, error: type[InputFileError] = InputFileError) -> bytes:
    """The bytes of a file the user named, refused if they are UTF-16 (`refuse_utf16`).

    Raises:
        FileNotFoundError: no such file.
        error (InputFileError or a kind of it): a directory, or a file that cannot be read.
        InputFileError: UTF-16.
    """
    if os.path.isdir(path):
        raise error(f"{path}: is a directory; pass a file in it.")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file.") from None
    except OSError as failure:
        raise error(f"{path}: cannot be read ({failure.strerror or failure}); pass a readable file.") from None
    refuse_utf16(path, data)
    return data


def read_utf8(path: str) -> str:
    """The text of a small file the user named (a vocabulary, a config), strictly UTF-8; a leading UTF-8
    byte-order mark is dropped.

    Raises:
        FileNotFoundError, InputFileError: `read_input`'s, or not UTF-8 (naming the line and the byte).
    """
    data = read_input(path)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        start = error.start + (3 if data.startswith(b"\xef\xbb\xbf") else 0)  # utf-8-sig counts after its BOM
        line = data[:start].count(b"\n") + 1
        raise InputFileError(
            f"{path}:{line}: byte 0x{data[start]:02x} is not UTF-8; re-encode the file as "
            f"UTF-8, e.g. `iconv -f latin1 -t utf-8 {path} > {utf8_copy_name(path)}`."
        ) from None


def utf8_copy_name(path: str) -> str:
    """Where the re-encoded copy of `path` may go: its name with ".utf8" before the extension, which tools read."""
    root, ext = os.path.splitext(path)
    return f"{root}.utf8{ext}"
