"""CoNLL files as users write them: the columns in the other order are refused, not trained swapped."""

import pytest

from keras_bert_lite.data.errors import DataError
from keras_bert_lite.data.ner import read_conll


def test_tags_in_the_first_column_are_refused(tmp_path):
    """`B-ORG EU` lines read 'B-ORG' as the word and 'EU' as its tag, silently: the model learnt words as tags."""
    path = tmp_path / "train.txt"
    path.write_text("-DOCSTART- O\n\nB-ORG EU\nO rejects\n\nB-PER Peter\n")
    with pytest.raises(
        DataError,
        match=rf"^{path}:3: the first column holds entity tags \('B-ORG'\) and the last "
        r"does not \('EU'\).*swap the columns",
    ):
        read_conll(str(path))


def test_words_that_look_like_tags_in_the_right_order_are_read(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text("U-boat B-MISC\nO O\n\nS-Bahn B-LOC\n")  # words with a tag's prefix, tags last
    assert read_conll(str(path)).tags == [["B-MISC", "O"], ["B-LOC"]]


def test_comment_lines_before_a_sentence_are_skipped(tmp_path):
    """CoNLL-U's `# text = ...` and MultiCoNER's `# id ...<TAB>domain=en` lines were read as a sentence of words
    `#`, tagged `...` and `domain=en`: a junk class to train on."""
    path = tmp_path / "train.txt"
    path.write_text("# sent_id = 1\n# text = EU rejects\nEU B-ORG\nrejects O\n\n# id 5d1f\tdomain=en\nPeter\tB-PER\n")
    read = read_conll(str(path))
    assert read.words == [["EU", "rejects"], ["Peter"]]
    assert read.tags == [["B-ORG", "O"], ["B-PER"]] and read.lines == [3, 7]


def test_a_sentence_starting_with_the_word_hash_is_read(tmp_path):
    """CoNLL-2003 has `#` as a word (POS `#`): its line ends in one of the file's tags, so it is no comment."""
    path = tmp_path / "train.txt"
    path.write_text("# # I-NP O\n1 CD I-NP O\n\nEU NNP I-NP B-ORG\n")
    assert read_conll(str(path)).words == [["#", "1"], ["EU"]]
