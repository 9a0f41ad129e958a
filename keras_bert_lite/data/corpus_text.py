"""Whether pretraining text files hold any text: checked before the endless example stream is built.

The stream repeats its files forever (pretraining.py), so files that yield no document would keep it reading
without ever producing an example: a silent hang. A file has text when it holds one character a BERT tokenizer
keeps: not whitespace, not a control or format character (Cc, Cf: deleted), not U+FFFD (what bytes that are not
UTF-8 become: deleted) and not a combining mark (Mn: deleted in uncased mode; a file of nothing else is refused
in both modes). One such character is a one-token sentence, and one such document is enough for the stream to
make examples (instances.py). Reading a file stops at its first such character.
"""

from __future__ import annotations

import codecs
import re
import unicodedata

from keras_bert_lite.data.errors import DataError

_CHUNK = 1 << 20
_NOT_SPACE = re.compile(r"\S")
_DELETED = {"Cc", "Cf", "Mn"}


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
        raise DataError(f"{path}: cannot be read ({error.strerror or error}); pass readable text files.") from None
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
