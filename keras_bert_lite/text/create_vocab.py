"""Trains a WordPiece vocab.txt from text files (one sentence or paragraph per line).

    kbl-vocab --input corpus1.txt corpus2.txt --vocab_size 30000 --lower_case --output vocab.txt

Reserved tokens [PAD] [UNK] [CLS] [SEP] [MASK] get ids 0-4. Words are split exactly as `BertTokenizer` splits them.
"""

import argparse

from keras_bert_lite.text.vocab_trainer import train_vocab


def _lines(paths):
    for path in paths:
        with open(path, "rb") as f:
            for line in f:
                yield line.rstrip(b"\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", nargs="+", required=True, help="text files, UTF-8, one line per sentence")
    parser.add_argument("--output", required=True, help="vocab.txt to write")
    parser.add_argument("--vocab_size", type=int, default=30000)
    case = parser.add_mutually_exclusive_group(required=True)
    case.add_argument("--lower_case", dest="lower_case", action="store_true", help="uncased vocabulary")
    case.add_argument("--cased", dest="lower_case", action="store_false", help="cased vocabulary")
    parser.add_argument("--min_count", type=int, default=2)
    parser.add_argument("--max_unique_chars", type=int, default=2000)
    args = parser.parse_args(argv)
    vocab = train_vocab(_lines(args.input), args.vocab_size, args.lower_case, min_count=args.min_count,
                        max_unique_chars=args.max_unique_chars)
    vocab.save(args.output)
    print(f"wrote {args.output}: {len(vocab)} tokens")


if __name__ == "__main__":
    main()
