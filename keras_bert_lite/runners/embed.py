"""`kbl-embed`: one vector per text of a file, by a text embedder (sentence-transformers' `encode`).

    kbl-embed --model all-MiniLM-L6-v2/ --input corpus.txt --output vectors.npy
    kbl-embed --model runs/pairs --input reviews.jsonl --text_column review --output reviews.jsonl.out.jsonl

--model is anything `kbl.load_embedder` takes: a sentence-transformers directory (pooled and normalised as its
files say), a Hugging Face or TF1 checkpoint (mean-pooled), a keras_bert_lite run directory or `.keras` embedder.
The vocabulary and its casing come from beside it (or --vocab, --lower_case). --input is a .txt file (every line
one text, blank lines too, so that row i of the vectors is line i + 1) or a .tsv/.csv/.jsonl file (the column or
field --text_column), plain or compressed. Each --output is written whole or not at all: `.npy` (float32
[texts, D], in input order) or `.jsonl` (one {"line", "text", "embedding"} object per text, "line" the line of
--input it starts on). Texts longer than --seq_length tokens are cut to it, as sentence-transformers cuts them
to its max_seq_length (the default here), and the command says how many were.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
import time

import keras
import numpy as np

from keras_bert_lite.checkpoints import embedding_settings, load_embedder
from keras_bert_lite.data.texts import is_text_lines, read_texts
from keras_bert_lite.layers.pooling import POOLING_MODES
from keras_bert_lite.models.embedder import POOLING, build_embedder
from keras_bert_lite.models.introspect import max_positions
from keras_bert_lite.models.text_embedder import DEFAULT_BATCH_SIZE, TOKENS_PER_TEXT, TextEmbedder
from keras_bert_lite.runners.common import CommandJob, RunJob, check_vocab_size, command, model_vocab
from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.runners.fill_mask import FillMaskJob
from keras_bert_lite.runners.finetune import FinetuneJob
from keras_bert_lite.runners.flags import distinct_integers, flag, redefault, true_or_false
from keras_bert_lite.utils.files import atomic_path

logger = logging.getLogger(__name__)

OUTPUT_SUFFIXES = (".npy", ".jsonl")
_EMBEDDER = "pooling overrides (default: the checkpoint's pooling and normalisation, the last block)"


@dataclasses.dataclass
class EmbedJob(CommandJob):
    """The settings of kbl-embed (one flag each)."""

    model: str = flag(
        "",
        "a sentence-transformers directory, Hugging Face directory or name, TF1 checkpoint, "
        "keras_bert_lite run directory or .keras embedder",
        group="model",
        required=True,
    )
    vocab: str = redefault(FillMaskJob, "vocab", "")
    lower_case: bool | None = redefault(FillMaskJob, "lower_case", None)
    seq_length: int | None = flag(
        None,
        "the longest input in tokens, [CLS] and [SEP] included; longer texts are cut "
        "(default: the checkpoint's sentence-transformers max_seq_length, else the "
        "model's position table)",
        group="model",
        type=int,
        minimum=3,
    )
    batch_size: int = flag(
        DEFAULT_BATCH_SIZE,
        f"the most texts per model call, batched by length (a batch of long "
        f"texts holds fewer: at most batch_size * {TOKENS_PER_TEXT} tokens, padding included)",
        group="model",
        type=int,
        minimum=1,
        maximum=4096,
    )
    input: str = flag(
        "",
        "the texts: .txt (one per line) or .tsv/.csv/.jsonl (--text_column), plain or compressed",
        group="data",
        required=True,
    )
    text_column: str = flag("text", "the column (.tsv/.csv) or field (.jsonl) holding the texts", group="data")
    skip_bad_rows: bool = redefault(FinetuneJob, "skip_bad_rows", False)
    pooling: str = flag("", "how token vectors become the text's vector", group=_EMBEDDER, choices=POOLING_MODES)
    normalize: bool | None = flag(
        None,
        "true: divide each vector by its L2 norm (cosine = dot product)",
        group=_EMBEDDER,
        type=true_or_false,
        metavar="true|false",
    )
    layers: tuple = flag(
        (),
        "the blocks pooled, concatenated (-1: the last), e.g. --layers=-4,-3,-2,-1",
        group=_EMBEDDER,
        type=distinct_integers,
        metavar="N[,N]",
        minimum=-64,
        maximum=63,
    )
    output: tuple = flag(
        (),
        "files to write: .npy (float32 [texts, D]) and/or .jsonl (line, text, embedding)",
        group="output",
        nargs="+",
        required=True,
    )
    quiet: bool = redefault(RunJob, "quiet", False)

    def check(self) -> None:
        """Refuses an --output of another kind and a --text_column for a .txt --input."""
        super().check()
        wrong = [path for path in self.output if not path.endswith(OUTPUT_SUFFIXES)]
        if wrong:
            raise SettingsError(
                f"--output {wrong[0]}: give a file ending in .npy (float32 vectors) or .jsonl (one "
                "JSON object per text)."
            )
        if self.text_column != "text" and is_text_lines(self.input):
            raise SettingsError(
                f"--text_column is for a .tsv/.csv/.jsonl --input; {self.input} holds one text per line."
            )

    def overrides(self) -> bool:
        return bool(self.pooling or self.layers) or self.normalize is not None


def check_output(path: str, job: EmbedJob) -> None:
    """Refuses an --output that is a directory, the --input file, or lies under a file; missing directories are
    created when it is written."""
    if os.path.isdir(path):
        raise SettingsError(f"--output {path}: is a directory; name a file in it, e.g. {os.path.join(path, 'x.npy')}.")
    if os.path.isfile(path) and os.path.isfile(job.input) and os.path.samefile(path, job.input):
        raise SettingsError(
            f"--output {path}: is the --input file, which writing the vectors would overwrite; give another --output."
        )
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise SettingsError(f"--output {path}: {parent} is a file, not a directory; give another --output.")


def embedder_model(job: EmbedJob) -> keras.Model:
    """The embedder --model names, rebuilt with --pooling, --normalize and --layers where given."""
    model = load_embedder(job.model)
    if not job.overrides():
        return model
    pooling = model.get_layer(POOLING)
    normalize = pooling.normalize if job.normalize is None else job.normalize
    try:
        return build_embedder(
            model.get_layer("encoder"),
            pooling=job.pooling or pooling.modes,
            layers=job.layers or (-1,),
            normalize=normalize,
        )
    except ValueError as error:
        raise SettingsError(f"--layers {','.join(map(str, job.layers))}: {error}") from None


def seq_length(job: EmbedJob, model: keras.Model) -> int:
    """--seq_length, else the checkpoint's sentence-transformers max_seq_length, else the model's position table;
    refused when longer than that table."""
    positions = max_positions(model.get_layer("encoder"))
    settings = embedding_settings(job.model)
    length = job.seq_length or (settings and settings.max_seq_length) or positions
    if length > positions:
        raise SettingsError(
            f"--seq_length {length} is longer than the {positions} positions of the model (--model "
            f"{job.model}: max_position_embeddings): pass --seq_length {positions} or less."
        )
    return length


def text_embedder(job: EmbedJob) -> TextEmbedder:
    """The embedder with its vocabulary (casing resolved; found before the model loads) and longest input."""
    vocab = model_vocab(job.vocab, job.model, job.lower_case, model_flag="--model")
    model = embedder_model(job)
    check_vocab_size(model.get_layer("encoder").get_layer("embeddings").vocab_size, vocab)
    return TextEmbedder(model, vocab, seq_length(job, model), job.batch_size)


def report_cut(embedder: TextEmbedder, counts: np.ndarray, lines: list, path: str) -> int:
    """Warns of the texts longer than the embedder's seq_length (naming the first one's line); returns their
    number."""
    cut = np.flatnonzero(counts > embedder.seq_length - 2)
    if len(cut):
        logger.warning(
            "%s:%d: this text and %d more are longer than --seq_length %d tokens and were cut to their "
            "first %d WordPiece tokens (a longer --seq_length, up to the model's position table, keeps "
            "more).",
            path,
            lines[cut[0]],
            len(cut) - 1,
            embedder.seq_length,
            embedder.seq_length - 2,
        )
    return len(cut)


def progress(job: EmbedJob, total: int):
    """`on_batch(count)`: a progress bar on a terminal (not --quiet), else a log line at each tenth done."""
    if not job.quiet and sys.stdout.isatty():
        bar = keras.utils.Progbar(total, unit_name="text")
        return bar.add
    done = [0]

    def on_batch(count: int) -> None:
        before, done[0] = done[0], done[0] + count
        if before * 10 // total != done[0] * 10 // total:
            logger.info("embedded %d of %d texts", done[0], total)

    return on_batch


def write_npy(path: str, vectors: np.ndarray, texts) -> None:
    """The vectors as one float32 `[texts, D]` array, in input order."""
    with atomic_path(path) as tmp:
        np.save(tmp, vectors)


def write_jsonl(path: str, vectors: np.ndarray, texts) -> None:
    """One {"line", "text", "embedding"} object per text; each float with the 9 significant digits that give the
    float32 back exactly."""
    numbers = ", ".join(["%.9g"] * vectors.shape[1])
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        for line, text, vector in zip(texts.lines, texts.texts, vectors.tolist()):
            head = json.dumps({"line": line, "text": text}, ensure_ascii=False)[:-1]
            f.write(f'{head}, "embedding": [{numbers % tuple(vector)}]}}\n')


WRITERS = {".npy": write_npy, ".jsonl": write_jsonl}


def check_finite(vectors: np.ndarray, texts, path: str) -> None:
    """Refuses vectors that are not finite (a model whose weights are), naming the first text's line."""
    bad = np.flatnonzero(~np.isfinite(vectors).all(axis=1))
    if len(bad):
        raise SettingsError(
            f"{path}:{texts.lines[bad[0]]}: the model gives non-finite values for this text (and "
            f"{len(bad) - 1} more); its weights are not finite: check --model."
        )


def run(job: EmbedJob) -> np.ndarray:
    """Embeds --input's texts and writes each --output; returns the vectors."""
    for path in job.output:
        check_output(path, job)
    texts = read_texts(job.input, job.text_column, job.skip_bad_rows)
    embedder = text_embedder(job)
    start = time.perf_counter()
    ids = embedder.token_ids(texts.texts)
    cut = report_cut(embedder, ids.row_lengths().numpy(), texts.lines, job.input)
    vectors = embedder.embed_ids(ids, on_batch=progress(job, len(texts.texts)))
    seconds = time.perf_counter() - start
    check_finite(vectors, texts, job.input)
    for path in job.output:
        WRITERS[os.path.splitext(path)[1]](path, vectors, texts)
        print(f"wrote {path}: {len(vectors)} vectors of {vectors.shape[1]} floats")
    print(
        f"embedded {len(vectors)} texts ({cut} cut to {embedder.seq_length} tokens) in {seconds:.1f} s "
        f"({len(vectors) / max(seconds, 1e-9):.0f} texts/s)"
    )
    return vectors


parse_args, main = command(EmbedJob, run, "Embed texts: one vector per text (sentence-transformers' encode).")

if __name__ == "__main__":
    main(sys.argv[1:])
