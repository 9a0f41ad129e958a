"""The documents of a corpus file in the original BERT format, read as a stream: memory stays flat in the size of
the file (a Wikipedia dump is often one multi-gigabyte file).

    one sentence per line
    a blank (or whitespace-only) line between documents

A file is read line by line (`tf.data.TextLineDataset`, plain or gzip-compressed) in blocks of `LINES_PER_BLOCK`
lines. Each block's text is appended to the unfinished document carried over from the blocks before; the
documents it completes are emitted and the rest is carried on (a `scan`). So a reader holds one block and one
document, never the file, and the documents are the ones `split_documents` finds in the whole file's text.

Two limits keep that true of any file:
  * a document still unfinished after `MAX_DOCUMENT_BYTES` (a file without blank lines is one document) is
    emitted at the end of that block, a line break, and the text after it starts the next document;
  * TensorFlow's line reader drops every carriage return, so "\\r\\n" line ends read as "\\n"; files whose lines
    end in a carriage return alone are refused before reading (corpus_text.py).
"""

from __future__ import annotations

import tensorflow as tf

LINES_PER_BLOCK = 8192
MAX_DOCUMENT_BYTES = 1 << 20
_DOC_BREAK = "\x1e"  # record separator: stands for a blank line between documents while splitting
_BLANK_LINES = r"\n(?:[ \t\f\v]*\n)+"
_no_autograph = tf.autograph.experimental.do_not_convert


@_no_autograph
def mark_document_breaks(text: tf.Tensor) -> tf.Tensor:
    """The text with line breaks normalised to "\\n" and each run of blank lines replaced by one `_DOC_BREAK`."""
    text = tf.strings.regex_replace(text, r"\r\n?", "\n")
    return tf.strings.regex_replace(text, _BLANK_LINES, _DOC_BREAK)


@_no_autograph
def _finished(parts: tf.Tensor) -> tf.Tensor:
    """Parts of text between document breaks -> the documents among them: stripped, the empty ones dropped."""
    docs = tf.strings.strip(parts)
    return tf.boolean_mask(docs, tf.strings.length(docs) > 0)


@_no_autograph
def split_documents(text: tf.Tensor) -> tf.Tensor:
    """A whole file's text in the original format -> its documents (sentences joined by "\\n"), `[docs]` strings.

    One sentence per line; documents are separated by blank (or whitespace-only) lines.
    """
    return _finished(tf.strings.split(mark_document_breaks(text), _DOC_BREAK))


@_no_autograph
def _next_documents(unfinished: tf.Tensor, lines: tf.Tensor):
    """One step of the scan: (the unfinished document, `[n]` lines) -> (the new unfinished document, `[docs]` the
    documents these lines finish). An unfinished document over `MAX_DOCUMENT_BYTES` counts as finished."""
    text = unfinished + tf.strings.reduce_join(lines, separator="\n") + "\n"
    parts = tf.strings.split(mark_document_breaks(text), _DOC_BREAK)  # the last one is unfinished
    too_long = tf.strings.length(parts[-1]) > MAX_DOCUMENT_BYTES
    finished = tf.size(parts) - 1 + tf.cast(too_long, tf.int32)
    return tf.where(too_long, "", parts[-1]), _finished(parts[:finished])


@_no_autograph
def file_documents(path: tf.Tensor, compression: tf.Tensor) -> tf.data.Dataset:
    """The documents of one file, in order, as a dataset of strings read as a stream (module docstring).

    Args:
        path: the file, a string scalar.
        compression: "" or "GZIP", a string scalar (`tf.data.TextLineDataset`'s `compression_type`).
    """
    blocks = tf.data.TextLineDataset(path, compression_type=compression).batch(LINES_PER_BLOCK)
    end = tf.data.Dataset.from_tensors(tf.constant(["", ""]))  # a blank line finishes the last document
    return blocks.concatenate(end).scan(tf.constant(""), _next_documents).unbatch()
