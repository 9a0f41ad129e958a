"""`kbl-vocab`: trains a WordPiece vocab.txt from text files (one sentence or paragraph per line).

    kbl-vocab --input corpus1.txt corpus2.txt --vocab_size 30000 --lower_case true --output vocab.txt

Reserved tokens [PAD] [UNK] [CLS] [SEP] [MASK] get ids 0-4. Words are split exactly as `BertTokenizer` splits them.
The vocabulary is the one tf_text's WordPiece learner (its `bert_vocab_from_dataset`, KerasHub's
`compute_word_piece_vocabulary`) learns from the same word counts, computed without its quadratic substring counts.
The casing is recorded beside the vocabulary (`tokenizer_config.json`), so every later tool takes it from there.
Bytes that are not UTF-8 are dropped, as BERT's tokenizer drops them, with one warning per file that holds some.
A gzip-compressed file is read as the text it holds; other compression formats are refused.
`--output` may name a directory (or end in "/"): vocab.txt is written inside it; naming an input file is refused
before anything is read. A vocabulary larger than `--vocab_size` is written with a warning that says why.
"""

import dataclasses
import logging
import math
import os
import sys

from keras_bert_lite.artifacts import VOCAB_FILES
from keras_bert_lite.data.corpus_text import NonUtf8Lines, read_lines
from keras_bert_lite.runners.common import CommandJob, command
from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.runners.flags import flag, true_or_false
from keras_bert_lite.text.casing import check_casing_conflict
from keras_bert_lite.text.vocab import SPECIAL_TOKENS
from keras_bert_lite.text.vocab_trainer import fixed_size, train_vocab
from keras_bert_lite.text.wordpiece_learner import SLACK_RATIO
from keras_bert_lite.utils.errors import InputFileError

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class VocabJob(CommandJob):
    """The settings of kbl-vocab (one flag each)."""

    input: tuple = flag(
        (), "text files, UTF-8, plain or gzip, one line per sentence", group="vocabulary", nargs="+", required=True
    )
    output: str = flag(
        "",
        "vocab.txt to write, or a directory (ending in /) to write vocab.txt in "
        "(tokenizer_config.json, with the casing, goes beside it)",
        group="vocabulary",
        required=True,
    )
    lower_case: bool = flag(
        None,
        "true: an uncased vocabulary (text lower-cased, accents stripped); false: cased",
        group="vocabulary",
        type=true_or_false,
        metavar="true|false",
        required=True,
    )
    vocab_size: int = flag(
        30000,
        "tokens in the vocabulary, the reserved ones included",
        group="vocabulary",
        type=int,
        minimum=len(SPECIAL_TOKENS) + 1,
    )
    min_count: int = flag(2, "occurrences a word needs to be counted", group="vocabulary", type=int, minimum=1)
    max_unique_chars: int = flag(
        2000, "most frequent characters kept as single-character tokens", group="vocabulary", type=int, minimum=1
    )


def _lines(path):
    """The lines of the file (plain or gzip: `data.corpus_text.read_lines`), as bytes without their "\\n"."""
    for line in read_lines(path):
        yield line.rstrip(b"\n")


def _corpus_lines(paths):
    """The lines of the files, in order; after reading each file, one warning if lines of it hold bytes that are
    not UTF-8 (the tokenizer drops those bytes; `NonUtf8Lines`)."""
    for path in paths:
        bad = NonUtf8Lines(path)
        for number, line in enumerate(_lines(path), 1):
            bad.add(number, line)
            yield line
        if bad.count:
            logger.warning(bad.warning())


def check_inputs(paths) -> None:
    """Refuses a missing file, a directory or a corpus with no text before any work (the text check stops at the
    first line that is not blank)."""
    for path in paths:
        if os.path.isdir(path):
            raise InputFileError(f"--input {path}: is a directory; pass the text files in it (e.g. {path}/*.txt).")
        if not os.path.exists(path):
            raise FileNotFoundError(f"--input {path}: no such file.")
    if not any(line.strip() for path in paths for line in _lines(path)):
        raise InputFileError(f"--input {' '.join(paths)}: no text (every line is blank); pass the corpus files.")


def output_path(job: VocabJob) -> str:
    """The file --output names: `vocab.txt` inside it when it is a directory or ends in "/" (the directory is
    created); refused when it is one of the --input files (before anything is read).

    Raises:
        SettingsError: --output is an input file.
    """
    output = job.output
    if output.endswith(("/", os.sep)) or os.path.isdir(output):
        output = os.path.join(output, VOCAB_FILES[0])
    if os.path.isfile(output) and any(os.path.isfile(p) and os.path.samefile(output, p) for p in job.input):
        raise SettingsError(
            f"--output {output}: is one of the --input files, which writing the vocabulary would "
            "overwrite; give another --output."
        )
    return output


def size_warning(vocab, job: VocabJob) -> str:
    """Why `vocab` has more tokens than --vocab_size, or "" when it has not."""
    extra = len(vocab) - job.vocab_size
    if extra <= 0:
        return ""
    return f"{len(vocab)} tokens, {extra} more than --vocab_size {job.vocab_size}: {_excess_reason(vocab, job)}."


def _excess_reason(vocab, job: VocabJob) -> str:
    fixed = fixed_size(vocab)
    if fixed > job.vocab_size:
        return (
            f"the reserved tokens and the characters kept (each also as ##c, so that every word can be spelt) "
            f"are {fixed} already; a lower --max_unique_chars ({job.max_unique_chars}) keeps fewer characters "
            "(the others read as [UNK])"
        )
    return (
        "the learner (as tf_text's) picks a whole-number word-frequency threshold, and on this corpus none "
        f"gives between {math.ceil(job.vocab_size * (1 - SLACK_RATIO))} and {job.vocab_size} tokens"
    )


def run(job: VocabJob):
    """Trains and writes the vocabulary (with its casing); returns it."""
    output = output_path(job)
    check_inputs(job.input)
    check_casing_conflict(output, job.lower_case)  # before training, which can take minutes
    vocab = train_vocab(
        _corpus_lines(job.input),
        job.vocab_size,
        job.lower_case,
        min_count=job.min_count,
        max_unique_chars=job.max_unique_chars,
    )
    warning = size_warning(vocab, job)
    if warning:
        logger.warning("%s: %s", output, warning)
    vocab.save(output)
    print(f"wrote {output}: {len(vocab)} tokens, {'uncased' if vocab.lower_case else 'cased'}")
    return vocab


parse_args, main = command(VocabJob, run, "Train a WordPiece vocabulary (vocab.txt) from text files.")

if __name__ == "__main__":
    main(sys.argv[1:])
