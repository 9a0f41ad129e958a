"""`kbl-fill-mask`: the most probable tokens for each [MASK] in texts, from a model's masked-LM head
(`kbl.fill_mask`: the tokens and probabilities of Hugging Face's fill-mask pipeline).

    kbl-fill-mask --model runs/pretrain "Paris is the [MASK] of France." "The [MASK] sat on the [MASK]."
    kbl-fill-mask --model bert-base-uncased --top_k 10 --json < texts.txt       # one text per line

The texts are the arguments, else the lines of standard input (blank lines skipped). Each needs at least one
"[MASK]", written so ("[mask]" is text); a text without one stops the command before the model loads, naming it.

Output: per text, the text, then a table with a column per mask (its token position, [CLS] being 0) and a row per
rank: token and probability. `--json`: one JSON object per text and line, {"text", "masks": [{"position",
"tokens", "token_ids", "scores"}, ...]}, scores in full precision.
"""

from __future__ import annotations

import dataclasses
import json
import sys

from keras_bert_lite import artifacts
from keras_bert_lite.mask_filling import MASK, fill_mask
from keras_bert_lite.runners.common import CommandJob, command, model_vocab
from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.runners.flags import flag, true_or_false
from keras_bert_lite.text import Vocab


@dataclasses.dataclass
class FillMaskJob(CommandJob):
    """The settings of kbl-fill-mask (one flag each)."""

    model: str = flag(
        "",
        "a pretraining run directory, a Hugging Face BertForMaskedLM or BertForPreTraining "
        "(directory or [org/]name[@revision]), or an original TF1 checkpoint",
        group="model",
        required=True,
    )
    texts: tuple = flag(
        (),
        f"texts with {MASK} (default: standard input, one per line)",
        group="input",
        names=("texts",),
        nargs="*",
        metavar="TEXT",
    )
    vocab: str = flag("", "vocab.txt or tokenizer.json (default: the one beside --model)", group="model")
    lower_case: bool | None = flag(
        None,
        "true: uncased vocabulary, false: cased (default: the vocabulary's)",
        group="model",
        type=true_or_false,
        metavar="true|false",
    )
    top_k: int = flag(
        artifacts.DEFAULT_TOP_K,
        "tokens per mask, most probable first (at most the vocabulary's size)",
        group="output",
        type=int,
        minimum=1,
    )
    json: bool = flag(
        False, "one JSON object per text and line instead of a table", group="output", action="store_true"
    )


def run(job: FillMaskJob) -> None:
    """Reads the texts, refuses one without a mask, then prints each text's predictions."""
    named = _named_texts(job.texts)
    _check_masks(named)
    texts = [text for _, text in named]
    try:
        fills = fill_mask(job.model, texts, job.top_k, vocab=_vocab(job))
    except ValueError as error:
        raise SettingsError(str(error)) from None
    for text, masks in zip(texts, fills):
        print(json_line(text, masks) if job.json else table(text, masks), flush=True)


def _named_texts(arguments: tuple) -> list[tuple[str, str]]:
    """(where, text) per text: the arguments ("text 2"), else standard input's lines but blank ones ("line 3")."""
    if arguments:
        return [(f"text {i}", text) for i, text in enumerate(arguments, 1)]
    if sys.stdin.isatty():
        print(f"reading texts with {MASK} from standard input, one per line (Ctrl-D ends)", file=sys.stderr)
    lines = sys.stdin.buffer.read().decode("utf-8", errors="replace").splitlines()
    named = [(f"line {i} of standard input", line) for i, line in enumerate(lines, 1) if line.strip()]
    if not named:
        raise SettingsError(f"no texts: give them as arguments or one per line on standard input, each with {MASK}.")
    return named


def _check_masks(named: list[tuple[str, str]]) -> None:
    """Refuses the first text without a mask, naming where it is."""
    where, text = next(((w, t) for w, t in named if MASK not in t), (None, None))
    if where:
        raise SettingsError(f"{where} ({text[:60]!r}) holds no {MASK}: put {MASK} where a token is to be predicted.")


def _vocab(job: FillMaskJob) -> Vocab:
    """--vocab, else the vocabulary beside --model, with its casing resolved (`common.model_vocab`); refused when
    --top_k exceeds its size."""
    vocab = model_vocab(job.vocab, job.model, job.lower_case, "--model")
    if job.top_k > len(vocab):
        raise SettingsError(f"--top_k {job.top_k} is more than the {len(vocab)} tokens of {vocab.source}.")
    return vocab


def table(text: str, masks) -> str:
    """The text, then a column per mask and a row per rank: token and probability (4 decimals)."""
    columns = [
        [f"{token:<{max(map(len, m.tokens))}}  {score:.4f}" for token, score in zip(m.tokens, m.scores)] for m in masks
    ]
    heads = [f"{MASK} {i} (position {m.position})" for i, m in enumerate(masks, 1)]
    widths = [max(len(head), len(column[0])) for head, column in zip(heads, columns)]
    rows = [("rank", heads)] + [(str(rank), cells) for rank, cells in enumerate(zip(*columns), 1)]
    return (
        "\n".join(
            [text]
            + [
                f"  {rank:>4}  " + "   ".join(f"{c:<{w}}" for c, w in zip(cells, widths)).rstrip()
                for rank, cells in rows
            ]
        )
        + "\n"
    )


def json_line(text: str, masks) -> str:
    """One JSON object: the text and, per mask, its position, tokens, token ids and scores."""
    return json.dumps(
        {
            "text": text,
            "masks": [
                {
                    "position": m.position,
                    "tokens": list(m.tokens),
                    "token_ids": list(m.token_ids),
                    "scores": list(m.scores),
                }
                for m in masks
            ],
        },
        ensure_ascii=False,
    )


parse_args, main = command(
    FillMaskJob, run, "The most probable tokens for each [MASK] in texts, from a model's masked-LM head."
)

if __name__ == "__main__":
    main(sys.argv[1:])
