"""SQuAD v1.1 / v2.0: examples from the official JSON files or tfds `squad/v1.1|v2.0`, document windows
(doc_stride), and n-best answer extraction with the v2 null-score threshold.

Questions and contexts are tokenised once, in batches, by the in-graph `BertTokenizer.tokenize_with_offsets`
(byte offsets into the context); `data.windows` cuts each context into windows of
`seq_length - len(question) - 3` tokens every `doc_stride` tokens (google-research/bert's `run_squad.py`, with
its max-context rule); a NumPy step maps the answer's character span to token positions and records each window
token's byte span, so that a
predicted span is the exact substring of the context. Each window is packed by `BertPacker` as
`[CLS] question [SEP] window [SEP]`.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools

import numpy as np
import tensorflow as tf

from keras_bert_lite.data.features import tokenize_fn
from keras_bert_lite.data.squad_json import SquadExample, read_squad_json
from keras_bert_lite.data.windows import cut_windows

__all__ = [
    "SquadExample",
    "Windows",
    "check_context_room",
    "extract_answers",
    "load_tfds",
    "make_windows",
    "read_squad_json",
]


@dataclasses.dataclass
class Windows:
    """Document windows of all examples (one row per window).

    Attributes:
        question_ids, context_ids: int32 RaggedTensor `[w, (tokens)]` (the question, the window's context).
        example: int `[w]` the example each window belongs to.
        offset: int `[w]` position of the window's first context token in the packed sequence (len(q) + 2).
        byte_spans: per window, int `[tokens, 2]` byte start/end in the context of each window token.
        max_context: per window, bool `[tokens]` whether this window is the token's best (most central) one.
        start, end: int `[w]` target positions in the packed sequence (0 = [CLS]: no answer in the window, as
            google-research/bert trains windows that miss the answer).
    """

    question_ids: tf.RaggedTensor
    context_ids: tf.RaggedTensor
    example: np.ndarray
    offset: np.ndarray
    byte_spans: list
    max_context: list
    start: np.ndarray
    end: np.ndarray

    def __len__(self) -> int:
        return len(self.example)


def load_tfds(version: str, split: str, data_dir: str | None = None) -> list[SquadExample]:
    """Examples of tfds `squad/v1.1` or `squad/v2.0` (`split`: train or validation)."""
    import tensorflow_datasets as tfds

    examples = []
    for ex in tfds.as_numpy(tfds.load(f"squad/v{version}", split=split, data_dir=data_dir)):
        answers = [(t.decode("utf-8"), int(s)) for t, s in zip(ex["answers"]["text"], ex["answers"]["answer_start"])]
        examples.append(
            SquadExample(
                ex["id"].decode("utf-8"),
                ex["question"].decode("utf-8"),
                ex["context"].decode("utf-8"),
                answers,
                bool(ex.get("is_impossible", False)),
            )
        )
    return examples


def _tokenize(tokenizer, texts):
    fn = tokenize_fn(tokenizer, with_offsets=True)
    ids, starts, ends = [], [], []
    for begin in range(0, len(texts), 2048):
        out = fn(tf.constant(texts[begin : begin + 2048]))
        ids += out.ids.to_list()
        starts += out.starts.to_list()
        ends += out.ends.to_list()
    return ids, starts, ends


def check_context_room(seq_length: int, max_query_length: int) -> None:
    """Raises a ValueError naming both flags when a window of `seq_length` tokens has no room for the context
    after `max_query_length` question tokens and the 3 special tokens ([CLS] q [SEP] context [SEP])."""
    if seq_length - max_query_length - 3 < 1:
        raise ValueError(
            f"--seq_length {seq_length} leaves no room for the context after --max_query_length "
            f"{max_query_length} and 3 special tokens; raise --seq_length or lower --max_query_length."
        )


def make_windows(
    examples: list[SquadExample], tokenizer, seq_length: int, doc_stride: int, max_query_length: int, training: bool
) -> Windows:
    """Cuts every example's context into overlapping windows (`data.windows`); for training, finds the answer's
    positions."""
    check_context_room(seq_length, max_query_length)
    questions = tf.ragged.constant(
        [q[:max_query_length] for q in _tokenize(tokenizer, [e.question for e in examples])[0]], tf.int32, ragged_rank=1
    )
    context_ids, starts, ends = _tokenize(tokenizer, [e.context for e in examples])
    contexts = tf.ragged.constant(context_ids, tf.int32, ragged_rank=1)
    spans = tf.RaggedTensor.from_row_lengths(_flat_spans(starts, ends), contexts.row_lengths())
    windows = cut_windows(contexts.row_lengths(), seq_length - questions.row_lengths() - 3, doc_stride)
    example, start, length = (t.numpy() for t in (windows.text, windows.start, windows.length))
    offset = questions.row_lengths().numpy()[example] + 2
    first, last = _answer_tokens(examples, starts, ends, training)
    inside = (start <= first[example]) & (last[example] < start + length)
    bounds = np.cumsum(length)[:-1]
    return Windows(
        question_ids=tf.gather(questions, windows.text),
        context_ids=windows.tokens(contexts),
        example=example,
        offset=offset,
        byte_spans=np.split(windows.tokens(spans).flat_values.numpy(), bounds),
        max_context=np.split(windows.max_context().flat_values.numpy(), bounds),
        start=np.where(inside, first[example] - start + offset, 0).astype(np.int32),
        end=np.where(inside, last[example] - start + offset, 0).astype(np.int32),
    )


def _flat_spans(starts: list, ends: list) -> np.ndarray:
    """The byte spans of all contexts' tokens, int64 `[tokens, 2]`."""
    flat = [np.fromiter(itertools.chain.from_iterable(rows), np.int64) for rows in (starts, ends)]
    return np.stack(flat, axis=-1).reshape(-1, 2)


def _answer_tokens(examples: list[SquadExample], starts: list, ends: list, training: bool):
    """The first and last context token of each example's first answer, int `[n]` each; -1 where there is none
    to train (no answer, an impossible question, an answer no token covers, or `training` False)."""
    first, last = np.full(len(examples), -1), np.full(len(examples), -1)
    for i, example in enumerate(examples):
        if training and example.answers and not example.is_impossible:
            text, char_start = example.answers[0]
            byte_start = len(example.context[:char_start].encode("utf-8"))
            byte_end = byte_start + len(text.encode("utf-8"))
            inside = np.flatnonzero((np.asarray(ends[i]) > byte_start) & (np.asarray(starts[i]) < byte_end))
            if len(inside):
                first[i], last[i] = inside[0], inside[-1]
    return first, last


def extract_answers(
    examples: list[SquadExample],
    windows: Windows,
    start_logits: list,
    end_logits: list,
    *,
    n_best_size: int = 20,
    max_answer_length: int = 30,
    version_2: bool = False,
    null_score_diff_threshold: float = 0.0,
):
    """Best answer text per question from the windows' logits.

    Args:
        examples, windows: as made by `make_windows` (training=False).
        start_logits, end_logits: per window, float `[packed length]` (padding may follow).
        n_best_size: start and end candidates per window, and answers kept per question.
        max_answer_length: the longest answer in tokens.
        version_2: allow "no answer" (SQuAD v2): predicted when the null score ([CLS] start + end, the
            lowest over the windows) exceeds the best span's score by more than `null_score_diff_threshold`.

    Returns:
        (predictions {qid: text}, n-best {qid: [{"text", "probability", "start_logit", "end_logit"}]},
         null-odds {qid: null score - best span score} (v2; empty for v1.1)).
    """
    by_example = collections.defaultdict(list)
    for w, e in enumerate(windows.example):
        by_example[int(e)].append(w)
    predictions, nbest_json, null_odds = {}, {}, {}
    for e, example in enumerate(examples):
        context = example.context.encode("utf-8")
        candidates, null_score = [], None
        for w in by_example.get(e, []):
            s, t = np.asarray(start_logits[w]), np.asarray(end_logits[w])
            offset, length = int(windows.offset[w]), len(windows.byte_spans[w])
            null = float(s[0] + t[0])
            null_score = null if null_score is None else min(null_score, null)
            region_s, region_t = s[offset : offset + length], t[offset : offset + length]
            top_s = np.argsort(-region_s, kind="stable")[:n_best_size]
            top_t = np.argsort(-region_t, kind="stable")[:n_best_size]
            for i in top_s:
                if not windows.max_context[w][i]:
                    continue
                for j in top_t:
                    if j < i or j - i + 1 > max_answer_length:
                        continue
                    spans = windows.byte_spans[w]
                    text = context[spans[i, 0] : spans[j, 1]].decode("utf-8", errors="replace")
                    candidates.append((float(region_s[i] + region_t[j]), text, float(region_s[i]), float(region_t[j])))
        candidates.sort(key=lambda c: -c[0])
        seen, best = set(), []
        for candidate in candidates:
            if candidate[1] not in seen:
                seen.add(candidate[1])
                best.append(candidate)
            if len(best) == n_best_size:
                break
        if version_2 and null_score is not None:
            best.append((null_score, "", null_score, 0.0))
            best.sort(key=lambda c: -c[0])
        if not best:
            best = [(0.0, "", 0.0, 0.0)]
        scores = np.array([c[0] for c in best])
        probabilities = np.exp(scores - scores.max())
        probabilities /= probabilities.sum()
        nbest_json[example.qid] = [
            {"text": c[1], "probability": float(p), "start_logit": c[2], "end_logit": c[3]}
            for c, p in zip(best, probabilities)
        ]
        non_null = [c for c in best if c[1]]
        if not version_2:
            predictions[example.qid] = non_null[0][1] if non_null else ""
            continue
        best_span = non_null[0][0] if non_null else -np.inf
        null_odds[example.qid] = float(null_score - best_span) if null_score is not None else 0.0
        predictions[example.qid] = (
            "" if not non_null or null_odds[example.qid] > null_score_diff_threshold else non_null[0][1]
        )
    return predictions, nbest_json, null_odds
