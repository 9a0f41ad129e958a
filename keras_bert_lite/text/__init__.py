"""Text → BERT inputs, in the graph, identical to the reference BERT tokenizer.

    from keras_bert_lite.text import BertPacker, BertTokenizer, Vocab

    vocab = Vocab.from_file("vocab.txt")                       # or a Hugging Face tokenizer.json
    tokenizer = BertTokenizer(vocab, lower_case=True)          # variant="portable": core TensorFlow ops only
    packer = BertPacker(seq_length=128, vocab=vocab)           # dynamic=True: pad to the batch's longest, 8-rounded
    ids = tokenizer.tokenize(tf.constant(["Hello, world!"]))   # int32 RaggedTensor [batch, (tokens)]
    inputs = packer(ids)                                       # {"input_word_ids", "input_mask", "input_type_ids"}
    inputs = packer(ids_a, ids_b)                              # [CLS] A [SEP] B [SEP]

Public API:
    Vocab: tokens, token_to_id, special ids (pad/unk/cls/sep/mask), is_continuation; from_file, save.
    BertTokenizer: tokenize, tokenize_with_offsets (byte offsets into the original string, word index), detokenize.
    BertPacker: one or two segments → the three int32 encoder inputs, reference truncation.
    train_vocab: WordPiece vocabulary from text (CLI: tasks/create_vocab.py).
All are tf.Modules: use them in tf.data, tf.function, Keras models and SavedModels.
"""

from keras_bert_lite.text.packing import BertPacker
from keras_bert_lite.text.tokenizer import BertTokenizer, TokensWithOffsets
from keras_bert_lite.text.vocab import SPECIAL_TOKENS, Vocab
from keras_bert_lite.text.vocab_trainer import train_vocab

__all__ = ["BertPacker", "BertTokenizer", "SPECIAL_TOKENS", "TokensWithOffsets", "Vocab", "train_vocab"]
