"""Corpus text files (one sentence per line, the original BERT format), plain or gzip-compressed: how to open
them, whether they hold documents enough for next-sentence prediction, and what their first MiB shows. Each is
checked before the work starts.

Compression (`corpus_compression`, `open_corpus`): a file is known as gzip by its first bytes, not its name, and
read decompressed, as a stream, by every reader (TensorFlow's line reader streams gzip). Other formats (bzip2,
xz, zstd, zip, ...) are refused, naming the command that recompresses them as gzip: their bytes would otherwise
be read as text.

Documents (`require_documents`): the pretraining stream repeats its files forever (pretraining.py), so files that
yield no document would keep it reading without ever producing an example: a silent hang. A document has text
when it holds one character a BERT tokenizer keeps: not whitespace, not a control or format character (Cc, Cf:
deleted), not U+FFFD (what bytes that are not UTF-8 become: deleted) and not a combining mark (Mn: deleted in
uncased mode; a file of nothing else is refused in both modes). A "not next" pair takes its second segment from
another document, so one document is refused too, and fewer documents than a window holds get a warning.
Counting stops once there are enough, so a real corpus is read only as far as its first documents.

The first MiB (`check_start`): bytes that are not UTF-8 are dropped, as BERT's tokenizer drops them (the
reference decodes with errors="ignore"; ours turns them into U+FFFD, then deletes it), so a Latin-1 "café" is
read as "caf" throughout a corpus: one warning per file that holds them, naming the fix. kbl-vocab counts them
in every line as it reads the corpus (`NonUtf8Lines`); pretraining checks only the first MiB of each file, as
its corpora can be many gigabytes. That MiB also shows a UTF-16 file, lines that end in a carriage return alone
(TensorFlow's line reader drops carriage returns, so such lines would run together) and a file without line
breaks: each is refused. A stray carriage return among line feeds gets a warning.
"""

from __future__ import annotations

import codecs
import logging
import re
import unicodedata

from keras_bert_lite.data.errors import DataError
from keras_bert_lite.utils.compression import compression_of, open_decompressed
from keras_bert_lite.utils.errors import InputFileError, refuse_utf16, utf8_copy_name

logger = logging.getLogger(__name__)

_CHUNK = 1 << 20
_SAMPLE = 1 << 20  # bytes at the start of each pretraining file checked: the warnings' "first MiB"
_NOT_SPACE = re.compile(r"\S")
_DELETED = {"Cc", "Cf", "Mn"}
_BLANK = b" \t\f\v\r\n"  # a line of only these separates documents
_LONE_CR = re.compile(rb"\r(?!\n)")
_TO_GZIP = {"bzip2": "bzcat", "xz": "xzcat", "zstd": "zstdcat", "lz4": "lz4cat", "zip": "unzip -p", "7z": "7z x -so"}


def _unreadable(path: str, error: OSError) -> DataError:
    """The error for a corpus file that cannot be read."""
    return DataError(f"{path}: cannot be read ({error.strerror or error}); pass readable text files.")


def corpus_compression(path: str) -> str:
    """ "" for a plain file, "GZIP" for a gzip-compressed one (`tf.data.TextLineDataset`'s `compression_type`).

    Raises:
        DataError: another compression format (naming the command that recompresses it as gzip), or the file
            cannot be read.
    """
    try:
        compression = compression_of(path)
    except OSError as error:
        raise _unreadable(path, error) from None
    if compression in ("", "gzip"):
        return compression.upper()
    raise DataError(
        f"{path}: is {compression}-compressed; corpora are read as plain text or gzip (streamed). "
        f"Recompress it: {_TO_GZIP[compression]} {path} | gzip > {path}.gz"
    )


def open_corpus(path: str):
    """The file's bytes as a binary stream, decompressed as they are read if the file is gzip.

    Raises:
        DataError: `corpus_compression`'s, or the file cannot be read.
    """
    compression = corpus_compression(path).lower()
    try:
        return open_decompressed(path, compression)
    except OSError as error:
        raise _unreadable(path, error) from None


def read_lines(path: str):
    """Yields the file's lines (bytes, each with its line break), decompressed as they are read.

    Raises:
        DataError: `open_corpus`'s, or the file cannot be read to its end.
    """
    try:
        with open_corpus(path) as f:
            yield from f
    except (OSError, EOFError) as error:  # a gzip file cut short ends in EOFError
        raise DataError(f"{path}: cannot be read to its end ({error}); pass a complete file.") from None


def _is_text(char: str) -> bool:
    return char != "\ufffd" and unicodedata.category(char) not in _DELETED


def has_text(path: str) -> bool:
    """Whether the file holds a character a BERT tokenizer keeps (module docstring).

    Raises:
        DataError: the file cannot be read.
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    try:
        with open_corpus(path) as f:
            while chunk := f.read(_CHUNK):
                if any(_is_text(match.group()) for match in _NOT_SPACE.finditer(decoder.decode(chunk))):
                    return True
    except (OSError, EOFError) as error:
        raise _unreadable(path, error) from None
    return False


def _line_has_text(line: bytes) -> bool:
    return any(_is_text(match.group()) for match in _NOT_SPACE.finditer(line.decode("utf-8", "replace")))


def count_documents(paths: list[str], limit: int) -> int:
    """The documents with text in the files (blank lines between them), counted up to `limit`.

    Raises:
        DataError: a file cannot be read.
    """
    count = 0
    for path in paths:
        counted = False  # the current document has been counted
        for line in read_lines(path):
            if not line.strip(_BLANK):
                counted = False
            elif not counted and _line_has_text(line):
                count, counted = count + 1, True
                if count >= limit:
                    return count
    return count


def _names(files: list[str]) -> str:
    return ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")


def require_documents(files: list[str], window_docs: int, reader: str = "") -> None:
    """Refuses files without two documents with text; warns when they hold fewer than a window of documents.

    Args:
        files: the text files one input pipeline reads.
        window_docs: documents per window, among which a "not next" segment is drawn (`pretraining_dataset`).
        reader: who reads them, for the message (e.g. "input pipeline 1 of 2"); "" for the whole run.

    Raises:
        DataError: no file, no text, or one document, naming the files and the fix.
    """
    if not files:
        raise DataError(f"no input file for {reader or 'pretraining'}; give at least one file per input pipeline.")
    count = count_documents(files, window_docs)
    whose = f"{_names(files)}" + (f" (the files of {reader})" if reader else "")
    if count == 0:
        raise DataError(
            f"{whose}: no text: empty, or only blank lines, whitespace or control characters, so "
            "pretraining would wait forever for a first example. Give --input_files text in the "
            "original format: one sentence per line, a blank line between documents."
        )
    if count == 1:
        raise DataError(
            f'{whose}: one document, so every "not next" pair of next-sentence prediction would take '
            "its second segment from that same document: the wrong task. Separate the documents with "
            "a blank line (one sentence per line), or give more files."
        )
    if count < window_docs:
        same = (window_docs / count - 1) / (window_docs - 1)
        logger.warning(
            f"{whose}: only {count} documents, fewer than a window of {window_docs} (--window_docs), "
            f'so each window repeats them and about {same:.0%} of "not next" pairs take their second '
            f"segment from their first's own document. Give more documents, or --window_docs {count}."
        )


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
        return (
            f"{self.path}: {lines}{where} {hold} bytes that are not UTF-8 (first: line {number}, byte "
            f"0x{byte:02x}); {dropped}, as BERT's tokenizer drops them. If the file is Latin-1, re-encode it: "
            f"iconv -f latin1 -t utf-8 {self.path} > {utf8_copy_name(self.path)}"
        )


def _read_start(path: str) -> tuple[bytes, bool]:
    """The first `_SAMPLE` bytes of the file (decompressed), and whether more follow.

    Raises:
        DataError: the file cannot be read.
    """
    try:
        with open_corpus(path) as f:
            return f.read(_SAMPLE), bool(f.read(1))
    except (OSError, EOFError) as error:
        raise _unreadable(path, error) from None


def non_utf8_lines(path: str, sample: bytes, cut: bool) -> NonUtf8Lines:
    """The lines holding bytes that are not UTF-8 in `sample`, the start of the file `path` (a character cut where
    the sample ends is no error when `cut`)."""
    bad = NonUtf8Lines(path, sampled=True)
    lines = sample.split(b"\n")
    for number, line in enumerate(lines[:-1], 1):
        bad.add(number, line)
    bad.add(len(lines), lines[-1], final=not cut)
    return bad


def _check_line_ends(path: str, sample: bytes, cut: bool) -> None:
    """Refuses a start of a file whose lines end in a carriage return alone, or without line breaks; warns about
    stray carriage returns among line feeds (TensorFlow's line reader drops them)."""
    lone = _LONE_CR.findall(sample[:-1] if cut else sample)  # a cut sample may end between "\r" and "\n"
    if lone and b"\n" not in sample:
        raise DataError(
            f"{path}: its lines end in a carriage return alone (classic Mac line ends); TensorFlow's "
            "line reader drops carriage returns, so they would run together. Convert them to line "
            f"feeds: tr '\\r' '\\n' < {path} > {path}.lf"
        )
    if cut and b"\n" not in sample:
        raise DataError(
            f"{path}: no line break in its first MiB; corpora hold one sentence per line, a blank line "
            "between documents."
        )
    if lone:
        line = sample.count(b"\n", 0, _LONE_CR.search(sample).start()) + 1
        logger.warning(
            f"{path}: {len(lone)} carriage return{'s' if len(lone) > 1 else ''} not followed by a line "
            f"feed in its first MiB (first: line {line}); they are dropped, so the text on either side "
            f"runs together. To read them as line breaks: tr '\\r' '\\n' < {path} > {path}.lf"
        )


def check_start(files: list[str]) -> None:
    """Checks the first MiB of each file (module docstring): refuses UTF-16, carriage-return line ends and a file
    without line breaks; warns about bytes that are not UTF-8 and stray carriage returns.

    Raises:
        DataError: a file cannot be read or is refused.
    """
    for path in files:
        sample, cut = _read_start(path)
        try:
            refuse_utf16(path, sample)
        except InputFileError as error:
            raise DataError(str(error)) from None
        _check_line_ends(path, sample, cut)
        bad = non_utf8_lines(path, sample, cut)
        if bad.count:
            logger.warning(bad.warning())
