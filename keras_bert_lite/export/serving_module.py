"""ServingModule: a task model plus the in-graph tokenizer and packer, with text-in signatures.

Signatures (dense tensors only, so TF Serving's Predict/Classify APIs can call them):

* `serving_default`: `text` tf.string `[batch]` (and `text_b` for pair tasks); texts are truncated to seq_length
  tokens but each batch is padded only to its longest text; a run that read long texts in windows (task.json
  `doc_stride`: classification, regression, multi_label, token_classification) has its export read them so too:
  windows of seq_length every doc_stride tokens (of a pair, of text_b), a text's logits its windows' mean or max
  (`window_pooling`), each token's label from the window where it has the most context ->
    - classification: `logits`, `probabilities` float32 `[batch, C]`, `label_id` int32 and `label` string
      `[batch]`;
    - regression: `score` float32 `[batch]`;
    - multi_label: `logits`, `probabilities` (sigmoid: each label on its own) float32 `[batch, labels]`, and the
      labels whose probability exceeds the run's threshold (task.json), in label order and then padded:
      `labels` string (padding "") and `label_ids` int32 (padding -1), each `[batch, labels]`;
    - token_classification: per whitespace-separated word (its first piece's label, as trained; the words within
      seq_length tokens, or every word with doc_stride): `words`, `word_labels` string and `word_starts`,
      `word_ends` int64 byte offsets into `text`, each `[batch, max_words]`, padded with "" / -1;
    - span (text = question, text_b = context): `answer` string, `start`, `end` int64 byte offsets into
      `text_b`, `score` and `null_score` float32, each `[batch]`;
    - encoder: `pooled_output` `[batch, H]`, `sequence_output` `[batch, seq_length, H]`;
    - embedding (`build_embedder`'s models): `embeddings` float32 `[batch, D]`, one vector per text (texts cut at
      seq_length tokens, as sentence-transformers cuts them at its max_seq_length);
    - fill_mask (a `BertPretrainer`; "[MASK]" in `text` is the mask token, as in Hugging Face's pipeline): per
      mask, in order, the top_k tokens (`tokens` string, `token_ids` int32) and their probabilities (`scores`
      float32), each `[batch, max_masks, top_k]`, and `mask_positions` int32 `[batch, max_masks]` (in the packed
      sequence, [CLS] being 0); max_masks is the most masks in a text of the batch, and a text's slots beyond its
      own masks hold "" / -1 / 0.0 / -1 (all of them for a text without a mask, or whose masks lie past
      seq_length - 2 tokens, which are cut).
* `preprocess`: the same text inputs -> `input_word_ids`, `input_mask`, `input_type_ids` int32
  `[batch, seq_length]` (seq_length fixed at export).
* `encode`: those three inputs (`[batch, seq]`, any seq <= max_position_embeddings) -> `pooled_output`,
  `sequence_output`, and `encoder_outputs` stacked as `[num_layers, batch, seq, H]`: the TF Hub encoder contract
  as a signature. A request's ids are checked first (`input_checks`: INVALID_ARGUMENT naming the input, value
  and position). The module's `__call__` (the Reusable SavedModel API, e.g. `hub.KerasLayer`) returns
  `encoder_outputs` as a list, as TF Hub encoders do.
* `classify` (classification, multi_label): TF Serving's Classify API: `inputs`, serialized `tf.Example`s with
  bytes features `text` (and `text_b`) -> `classes` string `[batch, C]` (the label names) and `scores` float32
  `[batch, C]` (serving_default's probabilities).
* `embed` (embedding only), `fill_mask` (fill_mask only): serving_default's function under a name that says what
  it does.
"""

from __future__ import annotations

import functools

import tensorflow as tf

from keras_bert_lite.artifacts import (
    DEFAULT_MAX_ANSWER_LENGTH,
    DEFAULT_THRESHOLD,
    DEFAULT_TOP_K,
    TaskSpec,
)
from keras_bert_lite.data.long_texts import window_segments
from keras_bert_lite.export.input_checks import checked_encoder_inputs
from keras_bert_lite.export.serving_checks import check_spec, check_task_type
from keras_bert_lite.export.signature_keys import signature_keys
from keras_bert_lite.models.embedder import EMBEDDINGS
from keras_bert_lite.models.encoder import INPUT_NAMES
from keras_bert_lite.models.inference import by_length_slices
from keras_bert_lite.models.masked_predictions import masked_token_predictions
from keras_bert_lite.text import BertPacker, BertTokenizer, Vocab
from keras_bert_lite.text.masked_text import tokenize_keeping_masks
from keras_bert_lite.text.packing import truncated_lengths
from keras_bert_lite.text.tokenizer import WORD_SEPARATOR
from keras_bert_lite.training.thresholds import threshold_logit

_HAS_SEPARATOR = rf"(?s).*{WORD_SEPARATOR}.*"  # holds a whitespace or separator character
_NEG = -1e9


def _texts(fields):
    """One tf.string `[batch]` input per text field, named as the field."""
    return [tf.TensorSpec([None], tf.string, name=name) for name in fields]


class ServingModule(tf.Module):
    """Tokenizer + packer + Keras task model, exported together.

    Args:
        model: the task model (an encoder for task_type "encoder", an embedder for "embedding").
        spec: the TaskSpec (task type, labels, casing, seq_length, text fields).
        vocab: the model's Vocab.
        variant: tokenizer op set, "default" (tf_text FastWordpiece, linked by stock TF Serving) or "portable"
            (core TensorFlow only).

    Raises:
        ValueError: a model or spec that the export cannot serve (`serving_checks`).
    """

    def __init__(self, model, spec: TaskSpec, vocab: Vocab, variant: str = "default"):
        super().__init__(name="serving")
        check_task_type(model, spec)
        self.model = model
        self.encoder = model if spec.task_type == "encoder" else model.get_layer("encoder")
        check_spec(model, self.encoder, spec)
        self.spec = spec
        self.tokenizer = BertTokenizer(vocab, lower_case=spec.lower_case, variant=variant)
        self.packer = BertPacker(spec.seq_length, vocab=vocab)
        # serving_default pads each batch only to its longest text (rounded up to 8): short real texts cost a
        # fraction of a full seq_length pass, and padding never changes the outputs (tested to 1e-5).
        self.dynamic_packer = BertPacker(spec.seq_length, vocab=vocab, dynamic=True)
        self.max_answer_length = spec.max_answer_length or DEFAULT_MAX_ANSWER_LENGTH
        self.labels = tf.constant(list(spec.labels) or [""], tf.string)
        self.top_k = spec.top_k or DEFAULT_TOP_K
        self.tokens = tf.constant(vocab.tokens, tf.string)  # in a SavedModel only where a signature uses it

        # Traced once and called from every signature and text field: the SavedModel holds one copy of the
        # tokenizer's graph (several hundred ops), and exporting traces it once.
        self._tokenize = tf.function(
            self.tokenizer.tokenize, input_signature=[tf.TensorSpec([None], tf.string)], autograph=False
        )
        encoder_spec = {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in INPUT_NAMES}
        self.__call__ = tf.function(self._call_encoder, input_signature=[encoder_spec], autograph=False)

    # ------------------------------------------------------------------ signatures
    def signatures(self) -> dict:
        """The concrete signature functions to pass to `tf.saved_model.save`."""
        fields = self.spec.text_fields
        # Every signature is graph code (Python branches only): traced without autograph, which would rewrite the
        # source of the tokenizer, the packer and the heads first.
        function = functools.partial(tf.function, autograph=False)
        if self.spec.is_pair:
            serve = function(lambda text, text_b: self._serve(text, text_b), input_signature=_texts(fields))
            preprocess = function(lambda text, text_b: self._pack(text, text_b), input_signature=_texts(fields))
        else:
            serve = function(lambda text: self._serve(text), input_signature=_texts(fields))
            preprocess = function(lambda text: self._pack(text), input_signature=_texts(fields))
        encode = function(
            lambda input_word_ids, input_mask, input_type_ids: self._encode(
                checked_encoder_inputs(self.encoder, input_word_ids, input_mask, input_type_ids)
            ),
            input_signature=[tf.TensorSpec([None, None], tf.int32, name=n) for n in INPUT_NAMES],
        )
        signatures = {}
        concrete = {  # traced for the keys of `signature_keys` (those warm-up requests are written for), in order
            "serving_default": serve.get_concrete_function,
            "preprocess": preprocess.get_concrete_function,
            "encode": encode.get_concrete_function,
            # classify parses tf.Examples, then calls serving_default's function
            "classify": lambda: function(
                lambda inputs: self._classify(inputs, serve),
                input_signature=[tf.TensorSpec([None], tf.string, name="inputs")],
            ).get_concrete_function(),
            "embed": lambda: signatures["serving_default"],
            "fill_mask": lambda: signatures["serving_default"],
        }
        for key in signature_keys(self.spec.task_type):
            signatures[key] = concrete[key]()
        return signatures

    # ------------------------------------------------------------------ pieces
    def _pack(self, text, text_b=None, dynamic=False):
        first = self._tokens(text)
        second = None if text_b is None else self._tokenize(text_b)
        return (self.dynamic_packer if dynamic else self.packer)(first, second)

    def _tokens(self, text):
        """`text`'s ids; a fill_mask export's keep each "[MASK]" as the mask token."""
        if self.spec.task_type == "fill_mask":
            return tokenize_keeping_masks(self._tokenize, text, self.tokenizer.vocab)
        return self._tokenize(text)

    def _call_encoder(self, inputs):
        return self.encoder(inputs, training=False)

    def _encode(self, inputs):
        out = self.encoder(inputs, training=False)
        return {
            "pooled_output": out["pooled_output"],
            "sequence_output": out["sequence_output"],
            "encoder_outputs": tf.stack(out["encoder_outputs"]),
        }

    def _serve(self, text, text_b=None):
        task = self.spec.task_type
        if task == "token_classification":
            return self._tag_words(text)
        if task == "span":
            return self._answer(text, text_b)
        if task == "encoder":  # fixed seq_length: sequence_output keeps one shape
            out = self.encoder(self._pack(text, text_b), training=False)
            return {"pooled_output": out["pooled_output"], "sequence_output": out["sequence_output"]}
        if task == "fill_mask":
            return self._fill_masks(text)
        if task == "embedding":  # float32 from the pooling layer
            return {EMBEDDINGS: by_length_slices(self.model, self._pack(text, dynamic=True))}
        logits = self._text_logits(text, text_b)
        if task == "regression":
            return {"score": logits[:, 0]}
        if task == "multi_label":
            return self._multi_label(logits)
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {
            "logits": logits,
            "probabilities": tf.nn.softmax(logits),
            "label_id": label_id,
            "label": tf.gather(self.labels, label_id),
        }

    def _multi_label(self, logits):
        """Every label's probability, and the labels above the threshold (compared as logits, as the runner's
        `thresholds.above_threshold`), in label order, padded to `[batch, labels]` with "" / -1."""
        predicted = logits > threshold_logit(self.spec.threshold or DEFAULT_THRESHOLD)
        ids = tf.ragged.boolean_mask(tf.broadcast_to(tf.range(tf.shape(logits)[1]), tf.shape(logits)), predicted)
        label_ids = ids.to_tensor(default_value=-1, shape=tf.shape(logits))
        labels = tf.where(label_ids >= 0, tf.gather(self.labels, tf.maximum(label_ids, 0)), "")
        return {"logits": logits, "probabilities": tf.sigmoid(logits), "labels": labels, "label_ids": label_ids}

    def _text_logits(self, text, text_b=None):
        """The model's output per text, float32 `[batch, C]`: on each text cut at seq_length, or (doc_stride) its
        windows' pooled (`data.long_texts`, as the run read them). Either way the rows (texts, or all texts' windows:
        full but for each text's last) go through `by_length_slices`, sorted by length into slices padded to their
        own longest: a request of short texts and long documents pads the short ones little."""
        segments = [self._tokens(text)] + ([] if text_b is None else [self._tokenize(text_b)])
        if not self.spec.doc_stride:
            return tf.cast(by_length_slices(self.model, self.dynamic_packer(*segments)), tf.float32)
        windows, segments = window_segments(segments, self.spec.seq_length, self.spec.doc_stride)
        logits = tf.cast(by_length_slices(self.model, self.dynamic_packer(*segments)), tf.float32)
        return windows.pool(logits, self.spec.window_pooling or "mean")

    def _fill_masks(self, text):
        """The top_k tokens and probabilities per mask (`masked_token_predictions`), with the tokens' strings."""
        out = masked_token_predictions(
            self.model, self._pack(text, dynamic=True), self.tokenizer.vocab.mask_id, self.top_k
        )
        real = out["token_ids"] >= 0
        out["tokens"] = tf.where(real, tf.gather(self.tokens, tf.maximum(out["token_ids"], 0)), "")
        return out

    def _classify(self, inputs, serve):
        features = {name: tf.io.FixedLenFeature([], tf.string, default_value="") for name in self.spec.text_fields}
        parsed = tf.io.parse_example(inputs, features)
        out = serve(*(parsed[name] for name in self.spec.text_fields))
        scores = out["probabilities"]
        return {"classes": tf.tile(self.labels[None], [tf.shape(scores)[0], 1]), "scores": scores}

    def _tag_words(self, text):
        """Per-word labels with byte offsets into `text`. The words are the text's whitespace-separated words, as
        in the training files (a word such as "U.S." or "Hewlett-Packard" is one word of several pieces), and each
        gets its first piece's label, as trained. A word the `seq_length` limit cuts, the words after it, and a word
        with no piece (only characters the tokenizer deletes) are not returned."""
        tokens = self.tokenizer.tokenize_with_offsets(text)
        keep = self.spec.seq_length - 2 if not self.spec.doc_stride else tf.int32.max  # windows: every token
        row = tf.cast(tokens.ids.value_rowids(), tf.int32)
        position = tf.cast(tf.ragged.range(tokens.ids.row_lengths()).flat_values, tf.int32)  # in its row
        start, end = tokens.starts.flat_values, tokens.ends.flat_values
        # A token starts a word when it starts its row or whitespace separates it from the token before.
        previous_end = tf.where(position == 0, start, tf.concat([start[:1], end[:-1]], axis=0))
        gap = tf.strings.substr(tf.gather(text, row), previous_end, tf.maximum(start - previous_end, 0))
        starts_word = (position == 0) | tf.strings.regex_full_match(gap, _HAS_SEPARATOR)
        word = tf.cumsum(tf.cast(starts_word, tf.int32)) - 1  # word number, flat
        whole = tf.math.segment_max(position, word) < keep  # [words]: not cut
        first = starts_word & tf.gather(whole, word)  # [tokens]
        word_labels = tf.gather(self.labels, tf.boolean_mask(self._token_label_ids(tokens.ids, row, position), first))
        word_starts = tf.boolean_mask(start, first)
        word_ends = tf.boolean_mask(tf.math.segment_max(end, word), whole)
        word_row = tf.boolean_mask(row, first)
        word_texts = tf.strings.substr(tf.gather(text, word_row), word_starts, word_ends - word_starts)
        per_row = tf.math.bincount(word_row, minlength=tf.shape(text)[0], dtype=tf.int64)

        def dense(values, default):
            return tf.RaggedTensor.from_row_lengths(values, per_row).to_tensor(default_value=default)

        return {
            "words": dense(word_texts, ""),
            "word_labels": dense(word_labels, ""),
            "word_starts": dense(word_starts, -1),
            "word_ends": dense(word_ends, -1),
        }

    def _token_label_ids(self, ids, row, position):
        """Each token's label id, int32 `[tokens]` (flat, row after row; `row`, `position`: each token's text and
        place in it): the model's on each text's first seq_length - 2 tokens (the later ones' are not meant to be
        read), or (doc_stride) on its windows, each token's from the window where it has the most context."""
        if not self.spec.doc_stride:
            keep = self.spec.seq_length - 2
            label_ids = tf.argmax(
                self.model(self.dynamic_packer(ids[:, :keep]), training=False), axis=-1, output_type=tf.int32
            )
            # Token j of row r sits at packed position j + 1 ([CLS] first).
            return tf.gather(
                tf.reshape(label_ids, [-1]), row * tf.shape(label_ids)[1] + tf.minimum(position, keep - 1) + 1
            )
        windows, (rows,) = window_segments((ids,), self.spec.seq_length, self.spec.doc_stride)
        label_ids = tf.argmax(self.model(self.dynamic_packer(rows), training=False), axis=-1, output_type=tf.int32)
        per_window = tf.RaggedTensor.from_tensor(label_ids[:, 1:], lengths=rows.row_lengths())  # [CLS] off
        return windows.merge(per_window).flat_values

    def _answer(self, question, context):
        """The best context span (start <= end, at most max_answer_length tokens) as text and byte offsets."""
        q = self._tokenize(question)
        if self.spec.max_query_length:  # as the run cut its questions
            q = q[:, : self.spec.max_query_length]
        c = self.tokenizer.tokenize_with_offsets(context)
        keep_q, keep_c = truncated_lengths(q.row_lengths(), c.ids.row_lengths(), self.spec.seq_length - 3)
        out = self.model(self.dynamic_packer(q, c.ids), training=False)
        start_logits, end_logits = (tf.cast(out[k], tf.float32) for k in ("start_logits", "end_logits"))
        seq = tf.shape(start_logits)[1]
        first = tf.cast(keep_q, tf.int32)[:, None] + 2  # [CLS] q [SEP] -> context
        position = tf.range(seq)[None]
        in_context = (position >= first) & (position < first + tf.cast(keep_c, tf.int32)[:, None])  # [b, s]
        i, j = tf.range(seq)[:, None], tf.range(seq)[None]
        band = (j >= i) & (j - i < self.max_answer_length)  # [s, s]
        allowed = band[None] & in_context[:, :, None] & in_context[:, None, :]
        scores = tf.where(allowed, start_logits[:, :, None] + end_logits[:, None, :], _NEG)
        best = tf.argmax(tf.reshape(scores, [tf.shape(scores)[0], -1]), axis=-1, output_type=tf.int32)
        start_tok, end_tok = best // seq, best % seq
        score = tf.reduce_max(scores, axis=[1, 2])
        found = tf.reduce_any(in_context, axis=1)
        # Context token index -> byte offsets into `context` (dense [b, seq]: always >= 1 column to index).
        index = tf.stack([tf.maximum(start_tok - first[:, 0], 0), tf.maximum(end_tok - first[:, 0], 0)], axis=1)
        c_start = tf.gather(c.starts.to_tensor(-1, shape=[None, self.spec.seq_length]), index[:, 0], batch_dims=1)
        c_end = tf.gather(c.ends.to_tensor(-1, shape=[None, self.spec.seq_length]), index[:, 1], batch_dims=1)
        start = tf.where(found, c_start, -1)
        end = tf.where(found, c_end, -1)
        answer = tf.where(found, tf.strings.substr(context, tf.maximum(start, 0), tf.maximum(end - start, 0)), "")
        return {
            "answer": answer,
            "start": start,
            "end": end,
            "score": tf.where(found, score, _NEG),
            "null_score": start_logits[:, 0] + end_logits[:, 0],
        }
