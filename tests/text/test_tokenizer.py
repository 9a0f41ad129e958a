"""BertTokenizer: the reference's ids on the golden lines (computed on this interpreter) for both variants and
casings, offsets, bad input, tf.data."""

import random
import unicodedata

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.text import BertTokenizer, Vocab
from tests.golden import text_reference_tokenization as reference
from tests.text.conftest import case_bytes

VARIANTS = ("default", "portable")
CASINGS = ("uncased", "cased")


@pytest.mark.parametrize("method", ["tokenize", "tokenize_with_offsets"])  # two paths: ids only, with offsets
@pytest.mark.parametrize("casing", CASINGS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_golden_ids_equal_reference(tokenizers, goldens, reference_ids, variant, casing, method):
    """Every golden line gives the reference's ids, both computed with this Python's Unicode tables."""
    cases = goldens["cases"]
    text = tf.constant([case_bytes(c) for c in cases])
    out = getattr(tokenizers[variant, casing], method)(text)
    got = (out if method == "tokenize" else out.ids).to_list()
    want = reference_ids[casing]
    mismatches = [(c.get("text", c.get("utf8_hex")), g, w) for c, g, w in zip(cases, got, want) if g != w]
    assert not mismatches, (
        f"{len(mismatches)}/{len(cases)} lines differ from the reference (Unicode "
        f"{unicodedata.unidata_version}), first (line, ours, reference): {mismatches[0]}"
    )
    assert len(cases) >= 400 and sum(map(len, want)) > 5000  # the reference really tokenised them


def test_goldens_pin_the_known_tf_text_differences(goldens):
    """The golden set holds the cases where tf_text's own BertTokenizer normalisation is wrong."""
    texts = [c.get("text", "") for c in goldens["cases"]]
    for needle in ("…", "ß", "，", "\x01", "\u200b", "\x0b", "ΟΔΟΣ", "\U000f0000", "e\u0301cole", "a" * 100):
        assert any(needle in t for t in texts), needle


def test_goldens_hold_characters_whose_properties_differ_between_supported_pythons(goldens):
    """Characters new in Unicode 14 and 15 / 15.1 (unassigned under Python 3.10 / 3.11): on each supported Python
    the tables and the reference must agree on them, whatever that Python's Unicode version says they are."""
    text = "".join(c.get("text", "") for c in goldens["cases"])
    for needle in (
        "\u0890",
        "\u2e5d",
        "\U00010570",
        "\U0001e08f",
        "\U00011f43",
        "\U0001e4ec",
        "\u2ffc",
        "\U00031350",
        "\U0002ebf0",
    ):
        assert needle in text, hex(ord(needle))


@pytest.mark.parametrize("variant", VARIANTS)
def test_known_ids(tokenizers, uncased_vocab, variant):
    tok = tokenizers[variant, "uncased"]
    ids = tok.tokenize(tf.constant(["Hello, world! unaffable", "Straße … ＡＢＣ", "a\x01b", ""])).to_list()
    v = uncased_vocab.token_to_id
    assert ids[0] == [v["hello"], v[","], v["world"], v["!"], v["una"], v["##ffa"], v["##ble"]]
    # Reference: lower() keeps ß (tf_text's casefold makes "ss"), keeps … (NFKC makes "...") and full-width
    # letters (NFKC makes "abc"); here ＡＢＣ lowers to ａｂｃ, which the vocab does not have.
    assert [uncased_vocab.tokens[i] for i in ids[1]] == ["st", "##raße", "…", "[UNK]"]
    assert ids[2] == [v["ab"]]  # control character deleted, not a word break
    assert ids[3] == []


@pytest.mark.parametrize("variant", VARIANTS)
def test_mapping_may_change_a_characters_class(tokenizers, uncased_vocab, variant):
    """Uncased: "≠" lower-cases to "=" + U+0338, a combining mark that is deleted; "=" is punctuation. In a batch
    where every changed character maps to one (written in place) and in one with a Hangul syllable (expanded)."""
    tok = tokenizers[variant, "uncased"]
    want = [uncased_vocab.token_to_id[t] for t in ("a", "=", "b")]
    assert tok.tokenize(tf.constant(["a≠B"])).to_list() == [want]
    assert tok.tokenize(tf.constant(["a≠B", "한"])).to_list()[0] == want


@pytest.mark.parametrize("variant", VARIANTS)
def test_random_tricky_text_equals_reference(tokenizers, uncased_vocab, variant):
    """Random strings of the characters where uncased mapping is tricky — capital/final sigma, combining marks
    (deleted), Hangul (expands), ≠ (changes class), İ, ẞ, titlecase digraphs, controls, NBSP/U+2028, emoji —
    against the vendored reference, through both methods, in batches large and small (so batches take both
    the in-place and the expanding lower-case path)."""
    ref = reference.FullTokenizer(dict(uncased_vocab.token_to_id), do_lower_case=True, max_input_chars_per_word=100)
    pools = [
        "abcXYZ",
        "ΣσςΑΒΓ",
        "\u0301\u0308\u0338",
        "한국어",
        "中文",
        " \t\n\u00a0\u2028",
        "\x00\x01\u200b\ufffd",
        "≠≮İẞé",
        ".,!?",
        "\U0001f600",
        "ǅǈ",
    ]
    rng = random.Random(0)
    texts = ["".join(rng.choice(rng.choice(pools)) for _ in range(rng.randint(0, 12))) for _ in range(600)]
    want = [ref.convert_tokens_to_ids(ref.tokenize(t)) for t in texts]
    tok = tokenizers[variant, "uncased"]
    signature = [tf.TensorSpec([None], tf.string)]
    methods = {
        "tokenize": tf.function(tok.tokenize, input_signature=signature),
        "tokenize_with_offsets": tf.function(lambda t: tok.tokenize_with_offsets(t).ids, input_signature=signature),
    }
    for name, method in methods.items():
        for size in (600, 5):
            got = []
            for i in range(0, len(texts), size):
                got += method(tf.constant([t.encode() for t in texts[i : i + size]])).to_list()
            mismatches = [(t, g, w) for t, g, w in zip(texts, got, want) if g != w]
            assert not mismatches, f"{name}, batches of {size}: {len(mismatches)} differ, first {mismatches[0]}"


@pytest.mark.parametrize("variant", VARIANTS)
def test_invalid_utf8_is_dropped_like_the_reference(tokenizers, variant):
    tok = tokenizers[variant, "uncased"]
    ids = tok.tokenize(tf.constant([b"caf\xff\xfe", b"caf"])).to_list()
    assert ids[0] == ids[1]


@pytest.mark.parametrize("variant", VARIANTS)
def test_offsets_point_into_the_original_string(tokenizers, uncased_vocab, variant):
    text = ["Héllo,  WORLD!\tunaffable", "\x01中文 ΟΔΟΣ", "plain: it's e-mail"]
    out = tokenizers[variant, "uncased"].tokenize_with_offsets(tf.constant(text))
    raw = [t.encode() for t in text]
    spans = [
        [raw[i][s:e].decode() for s, e in zip(starts, ends)]
        for i, (starts, ends) in enumerate(zip(out.starts.to_list(), out.ends.to_list()))
    ]
    assert spans[0] == ["Héllo", ",", "WORLD", "!", "una", "ffa", "ble"]
    assert spans[1] == ["中", "文", "Ο", "Δ", "ΟΣ"]  # ο ##δ ##ος
    assert spans[2] == ["plain", ":", "it", "'", "s", "e", "-", "mail"]
    assert out.words.to_list()[0] == [0, 1, 2, 3, 4, 4, 4]
    assert out.ids.to_list() == tokenizers[variant, "uncased"].tokenize(tf.constant(text)).to_list()


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_tokens_text_holds_the_characters_normalisation_deleted_after_it(tokenizers, variant):
    # Uncased mode strips a decomposed accent; the token's text keeps it (a SQuAD answer "Café", an NER word).
    text = ["Cafe\u0301 is Zoe\u0308.", "a\x01b c\u200bd", "Cafe\u0301"]
    out = tokenizers[variant, "uncased"].tokenize_with_offsets(tf.constant(text))
    raw = [t.encode() for t in text]
    spans = [
        [raw[i][s:e].decode() for s, e in zip(starts, ends)]
        for i, (starts, ends) in enumerate(zip(out.starts.to_list(), out.ends.to_list()))
    ]
    assert spans == [["Cafe\u0301", "is", "Zoe\u0308", "."], ["a\x01b", "c\u200bd"], ["Cafe\u0301"]]


@pytest.mark.parametrize("variant", VARIANTS)
def test_variants_agree_on_offsets(tokenizers, goldens, variant):
    text = tf.constant([case_bytes(c) for c in goldens["cases"][:120]])
    a = tokenizers["default", "cased"].tokenize_with_offsets(text)
    b = tokenizers["portable", "cased"].tokenize_with_offsets(text)
    for x, y in zip(a, b):
        assert x.to_list() == y.to_list()


def test_detokenize(tokenizers):
    tok = tokenizers["portable", "uncased"]
    ids = tok.tokenize(tf.constant(["Unaffable tokenizers, indeed!", ""]))
    assert tok.detokenize(ids).numpy().tolist() == [b"unaffable tokenizers , indeed !", b""]


def test_bad_input_raises_clear_errors(tokenizers):
    tok = tokenizers["default", "uncased"]
    with pytest.raises(TypeError, match="tf.string"):
        tok.tokenize(tf.constant([1, 2]))
    with pytest.raises(TypeError, match="expected strings"):
        tok.tokenize([1, 2])
    with pytest.raises(ValueError, match=r"shape \[batch\]"):
        tok.tokenize(tf.constant([["a"]]))
    with pytest.raises(ValueError, match="variant"):
        BertTokenizer(tok.vocab, lower_case=True, variant="fast")
    with pytest.raises(TypeError, match="lower_case"):
        BertTokenizer(tok.vocab, lower_case="yes")


@pytest.mark.parametrize("variant", VARIANTS)
def test_tf_data_and_tf_function(tokenizers, variant):
    tok = tokenizers[variant, "uncased"]
    ds = tf.data.Dataset.from_tensor_slices(["Hello there", "", "Ünïcödé!"] * 2).batch(3)
    ds = ds.map(lambda text: tok.tokenize(text).to_tensor())
    eager = tok.tokenize(tf.constant(["Hello there", "", "Ünïcödé!"])).to_tensor().numpy()
    for batch in ds:
        np.testing.assert_array_equal(batch.numpy(), eager)
    graph = tf.function(tok.tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
    assert graph(tf.constant(["Hello there", "", "Ünïcödé!"])).to_list() == [list(r[r > 0]) for r in eager]


def test_max_chars_per_word(uncased_vocab):
    tok = BertTokenizer(uncased_vocab, lower_case=True, max_chars_per_word=5, variant="portable")
    assert tok.tokenize(tf.constant(["hello hellos"])).to_list() == [
        [uncased_vocab.token_to_id["hello"], uncased_vocab.unk_id]
    ]


@pytest.mark.parametrize("variant", VARIANTS)
def test_vocab_without_continuation_pieces(variant):
    """Only whole-word pieces: a word that is not one becomes [UNK]."""
    vocab = Vocab(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "ab"])
    tok = BertTokenizer(vocab, lower_case=True, variant=variant)
    assert tok.tokenize(tf.constant(["ab aab b,", "c"])).to_list() == [[7, 1, 6, 1], [1]]


def test_batch_composition_does_not_change_rows(tokenizers):
    """The default variant takes a shortcut for all-ASCII batches: every mix gives each row's own tokens."""
    tok = tokenizers["default", "uncased"]
    graph = tf.function(tok.tokenize_with_offsets, input_signature=[tf.TensorSpec([None], tf.string)])
    rows = ["Hello there", "Ünïcödé!", "", "déjà vu, again", "plain ascii."]
    alone = {r: [t.to_list()[0] for t in graph(tf.constant([r]))[:3]] for r in rows}
    for batch in (rows, rows[::2], rows[1::2], [rows[0], rows[4]], [rows[1], rows[3]], []):
        out = graph(tf.constant(batch, tf.string))
        assert [[t.to_list()[i] for t in out[:3]] for i in range(len(batch))] == [alone[r] for r in batch]
