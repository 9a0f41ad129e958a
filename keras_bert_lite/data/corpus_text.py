"""Corpus text files (one sentence per line, the original BERT format): whether they hold text, and which of their
lines hold bytes that are not UTF-8. Both are checked before the work starts.

Text (`require_text`): the pretraining stream repeats its files forever (pretraining.py), so files that yield no
document would keep it reading without ever producing an example: a silent hang. A file has text when it holds
one character a BERT tokenizer keeps: not whitespace, not a control or format character (Cc, Cf: deleted), not
U+FFFD (what bytes that are not UTF-8 become: deleted) and not a combining mark (Mn: deleted in uncased mode; a
file of nothing else is refused in both modes). One such character is a one-token sentence, and one such document
is enough for the stream to make examples (instances.py). Reading a file stops at its first such character.

Bytes that are not UTF-8 (`NonUtf8Lines`, `warn_non_utf8`): BERT's tokenizer drops them (the reference decodes with
errors="ignore"; ours turns them into U+FFFD, then deletes it), so a Latin-1 "café" is read as "caf" throughout a
corpus. They are read the same way here, with one warning per file that holds them, naming the fix. kbl-vocab
counts them in every line as it reads the corpus; pretraining checks only the first MiB of each file
(`warn_non_utf8`), as its corpora can be many gigabytes.
"""

from __future__ import annotations

import codecs
import logging
import re
import unicodedata

from keras_bert_lite.data.errors import DataError
from keras_bert_lite.utils.errors import utf8_copy_name

logger = logging.getLogger(__name__)

_CHUNK = 1 << 20
_SAMPLE = 1 << 20     # bytes at the start of each pretraining file checked for UTF-8: the warning's "first MiB"
_NOT_SPACE = re.compile(r"\S")
_DELETED = {"Cc", "Cf", "Mn"}


def _unreadable(path: str, error: OSError) -> DataError:
    """The error for a corpus file that cannot be read."""
    return DataError(f"{path}: cannot be read ({error.strerror or error}); pass readable text files.")


def has_text(path: str) -> bool:
    """Whether the file holds a character a BERT tokenizer keeps.

    Raises:
        DataError: the file cannot be read.
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    try:
        with open(path, "rb") as f:
            while chunk := f.read(_CHUNK):
                for match in _NOT_SPACE.finditer(decoder.decode(chunk)):
                    char = match.group()
                    if char != "\ufffd" and unicodedata.category(char) not in _DELETED:
                        return True
    except OSError as error:
        raise _unreadable(path, error) from None
    return False


def require_text(files: list[str], reader: str = "") -> None:
    """Returns if one of `files` has text (`has_text`, stopping at the first that does).

    Args:
        files: the text files one input pipeline reads.
        reader: who reads them, for the message (e.g. "input pipeline 1 of 2"); "" for the whole run.

    Raises:
        DataError: none has text, naming the files and the fix.
    """
    if not files:
        raise DataError(f"no input file for {reader or 'pretraining'}; give at least one file per input pipeline.")
    if any(has_text(path) for path in files):
        return
    names = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
    whose = f" (the files of {reader})" if reader else ""
    raise DataError(f"{names}{whose}: no text: empty, or only blank lines, whitespace or control characters, so "
                    "pretraining would wait forever for a first example. Give --input_files text in the original "
                    "format: one sentence per line, a blank line between documents.")


class NonUtf8Lines:
    """Counts the lines of one file that hold bytes that are not UTF-8, and remembers the first.

    Attributes:
        path: the file.
        sampled: only the first MiB of the file is checked (pretraining), not all of it; the warning says so.
        count: lines counted so far.
        first: `(line number, first byte that is not UTF-8)` of the first such line; None while there is none.
    """

    def __init__(self, path: str, sampled: bool = False):
        self.path = path
        self.sampled = sampled
        self.count = 0
        self.first: tuple[int, int] | None = None

    def add(self, number: int, line: bytes, final: bool = True) -> None:
        """Counts the line if it holds a byte that is not UTF-8 (an ASCII line, most of a corpus, costs one
        `bytes.isascii`).

        Args:
            number: its line number, from 1.
            line: its bytes.
            final: False for a line that a sample of the file cuts short: a character cut at its end is no error.
        """
        if line.isascii():
            return
        try:
            codecs.utf_8_decode(line, "strict", final)
        except UnicodeDecodeError as error:
            self.count += 1
            if self.first is None:
                self.first = (number, line[error.start])

    def warning(self) -> str:
        """What the user is told once `count` > 0: the lines, the first of them and its byte, and the fix."""
        number, byte = self.first
        lines = f"{self.count} line{'s' if self.count > 1 else ''}"
        where = " of its first MiB (pretraining checks only the start of each file)" if self.sampled else ""
        hold = "hold" if self.count > 1 else "holds"
        dropped = "they are dropped" if self.sampled else "they were dropped"
        return (f"{self.path}: {lines}{where} {hold} bytes that are not UTF-8 (first: line {number}, byte "
                f"0x{byte:02x}); {dropped}, as BERT's tokenizer drops them. If the file is Latin-1, re-encode it: "
                f"iconv -f latin1 -t utf-8 {self.path} > {utf8_copy_name(self.path)}")


def _read_start(path: str) -> tuple[bytes, bool]:
    """The first `_SAMPLE` bytes of the file, and whether more follow.

    Raises:
        DataError: the file cannot be read.
    """
    try:
        with open(path, "rb") as f:
            return f.read(_SAMPLE), bool(f.read(1))
    except OSError as error:
        raise _unreadable(path, error) from None


def non_utf8_start(path: str) -> NonUtf8Lines:
    """The lines holding bytes that are not UTF-8 among the first `_SAMPLE` bytes of the file (a character cut
    where the sample ends is no error).

    Raises:
        DataError: the file cannot be read.
    """
    sample, cut = _read_start(path)
    bad = NonUtf8Lines(path, sampled=True)
    lines = sample.split(b"\n")
    for number, line in enumerate(lines[:-1], 1):
        bad.add(number, line)
    bad.add(len(lines), lines[-1], final=not cut)
    return bad


def warn_non_utf8(files: list[str]) -> None:
    """Logs one warning for each of `files` whose first MiB holds bytes that are not UTF-8 (`non_utf8_start`).

    Raises:
        DataError: a file cannot be read.
    """
    for path in files:
        bad = non_utf8_start(path)
        if bad.count:
            logger.warning(bad.warning())
