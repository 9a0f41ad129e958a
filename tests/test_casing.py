"""Casing lives with the vocabulary: a cased vocab from kbl-vocab is cased through pretraining, fine-tuning and
export without any casing flag; a contradicting flag is refused, naming both."""

import json

import pytest
import tensorflow as tf

from keras_bert_lite.runners import export, glue, pretrain, vocab
from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.text import BertPacker, BertTokenizer, Vocab
from keras_bert_lite.text.casing import inferred_casing, recorded_casing
from keras_bert_lite.utils.errors import InputFileError
from tests.finetune.conftest import common_flags
from tests.finetune.test_custom import write_csv

TEXTS = ["Python Lists are Mutable .", "the python list is mutable ."]


@pytest.mark.slow
def test_a_cased_vocabulary_stays_cased_end_to_end(tmp_path, pydoc_corpus):
    vocab_path = str(tmp_path / "vocab" / "vocab.txt")
    vocab.main(["--input", pydoc_corpus[0], "--output", vocab_path, "--vocab_size", "2000", "--lower_case", "false"])
    assert recorded_casing(vocab_path)[0] is False

    pretrained = str(tmp_path / "pretrain")
    pretrain.run(
        pretrain.parse_args(
            [
                "--input_files",
                pydoc_corpus[0],
                "--vocab",
                vocab_path,
                "--preset",
                "tiny",
                "--model_dir",
                pretrained,
                "--seq_length",
                "32",
                "--batch_size",
                "4",
                "--steps",
                "2",
                "--log_every",
                "1",
                "--quiet",
            ]
        )
    )
    assert json.loads(open(f"{pretrained}/tokenizer_config.json").read())["do_lower_case"] is False

    rows = [{"text": t, "label": label} for t, label in zip(TEXTS * 4, ["a", "b"] * 4)]
    data = write_csv(tmp_path / "train.csv", rows)
    finetuned = str(tmp_path / "finetune")
    glue.run(glue.parse_args(common_flags(pretrained, finetuned, train_file=data, dev_file=data, batch_size=4)))
    assert json.loads(open(f"{finetuned}/task.json").read())["lower_case"] is False

    served = tf.saved_model.load(
        export.run(export.parse_args(["--model", finetuned, "--model_base_path", str(tmp_path / "exports")]))
    )
    ids = served.signatures["preprocess"](text=tf.constant(TEXTS))["input_word_ids"].numpy()
    cased = Vocab.from_file(vocab_path)
    expected = BertPacker(32, vocab=cased)(BertTokenizer(cased, lower_case=False).tokenize(tf.constant(TEXTS)))
    assert (ids == expected["input_word_ids"].numpy()).all()
    uncased_ids = BertPacker(32, vocab=cased)(
        BertTokenizer(cased, lower_case=False).tokenize(tf.constant([t.lower() for t in TEXTS]))
    )["input_word_ids"].numpy()
    assert (ids[0] != uncased_ids[0]).any()  # the casing changed the ids: the check can tell

    with pytest.raises(
        SettingsError,
        match=r"--lower_case true contradicts the vocabulary: .*tokenizer_config"
        r"\.json says it is cased",
    ):
        glue.run(
            glue.parse_args(
                [
                    "--init",
                    pretrained,
                    "--train_file",
                    data,
                    "--dev_file",
                    data,
                    "--model_dir",
                    str(tmp_path / "other"),
                    "--lower_case",
                    "true",
                ]
            )
        )


def test_casing_sources(tmp_path, uncased_vocab_path):
    assert Vocab.from_file(uncased_vocab_path).lower_case is True  # HF tokenizer_config.json
    tokens = Vocab.from_file(uncased_vocab_path).tokens
    assert inferred_casing(tokens) is True
    assert inferred_casing(list(tokens) + [t.capitalize() for t in tokens[2000:3000]]) is False
    original = tmp_path / "cased_L-12_H-768_A-12"
    original.mkdir()
    (original / "vocab.txt").write_text("\n".join(tokens) + "\n")
    vocab_in_dir = Vocab.from_file(original / "vocab.txt")
    assert vocab_in_dir.lower_case is False and "cased_L-12_H-768_A-12" in vocab_in_dir.casing_source
    with pytest.raises(ValueError, match="lower_case=True contradicts the vocabulary: the original checkpoint"):
        BertTokenizer(vocab_in_dir, lower_case=True)
    bare = tmp_path / "bare" / "vocab.txt"
    bare.parent.mkdir()
    bare.write_text("\n".join(tokens) + "\n")
    assert Vocab.from_file(bare).casing_source == "its tokens"
    assert BertTokenizer(Vocab.from_file(bare), lower_case=False, variant="portable").lower_case is False  # a warning


def test_a_second_vocabulary_with_the_other_casing_needs_its_own_directory(tmp_path, monkeypatch):
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "film", "##s"]
    Vocab(tokens, lower_case=True).save(tmp_path / "uncased.txt")
    Vocab(tokens, lower_case=False).save(tmp_path / "uncased.txt")  # replacing the same file: its casing goes
    assert Vocab.from_file(tmp_path / "uncased.txt").lower_case is False
    Vocab(tokens, lower_case=True).save(tmp_path / "uncased.txt")
    with pytest.raises(
        InputFileError,
        match=r"tokenizer_config\.json records that .*uncased\.txt beside it is "
        r"uncased; writing the cased cased\.txt there would change that",
    ):
        Vocab(tokens, lower_case=False).save(tmp_path / "cased.txt")
    assert not (tmp_path / "cased.txt").exists()  # nothing written
    assert Vocab.from_file(tmp_path / "uncased.txt").lower_case is True
    monkeypatch.setattr(vocab, "train_vocab", lambda *args, **kwargs: pytest.fail("trained before refusing"))
    with pytest.raises(SystemExit, match="error: .*records that .*uncased.txt beside it is uncased"):
        vocab.main(
            [
                "--input",
                str(tmp_path / "uncased.txt"),
                "--output",
                str(tmp_path / "cased.txt"),
                "--vocab_size",
                "20",
                "--lower_case",
                "false",
            ]
        )


def test_casing_records_must_be_json_booleans(tmp_path):
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n")
    (tmp_path / "tokenizer_config.json").write_text('{"do_lower_case": "false"}')
    with pytest.raises(
        InputFileError,
        match=r"tokenizer_config\.json: field 'do_lower_case' is 'false'; it must "
        "be JSON true or false",
    ):
        Vocab.from_file(tmp_path / "vocab.txt")


@pytest.mark.parametrize(
    "field, value",
    [("do_basic_tokenize", False), ("tokenize_chinese_chars", False), ("tokenizer_class", "BertJapaneseTokenizer")],
)
def test_a_tokenizer_config_asking_for_another_tokenization_is_refused(tmp_path, field, value):
    """Hugging Face skips the BasicTokenizer, keeps CJK characters together or runs MeCab for these; they were
    ignored, so the token ids silently differed from the model's."""
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True, field: value}))
    with pytest.raises(
        InputFileError,
        match=rf"tokenizer_config\.json: field '{field}' is .*would not be the "
        "model's",
    ):
        Vocab.from_file(tmp_path / "vocab.txt")
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps({"do_lower_case": True, "do_basic_tokenize": True, "tokenizer_class": "BertTokenizerFast"})
    )
    assert Vocab.from_file(tmp_path / "vocab.txt").lower_case is True
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps({"do_lower_case": True, "tokenizer_class": "ElectraTokenizerFast"})
    )
    assert Vocab.from_file(tmp_path / "vocab.txt").lower_case is True  # a subclass that tokenizes as BERT's
