"""`python -m keras_bert_lite --version`; without arguments, lists the command-line tools."""

import argparse

from keras_bert_lite import _version

TOOLS = """command-line tools (each also runs as the script in tasks/ or export/):
  kbl-vocab     train a WordPiece vocab.txt                   tasks/create_vocab.py
  kbl-pretrain  pretrain (MLM + NSP) on raw text              tasks/run_pretraining.py
  kbl-glue      fine-tune on GLUE or your own data            tasks/run_glue.py
  kbl-squad     fine-tune on SQuAD v1.1 / v2.0                tasks/run_squad.py
  kbl-ner       fine-tune for NER (CoNLL-2003)                tasks/run_ner.py
  kbl-swag      fine-tune for multiple choice (SWAG)          tasks/run_swag.py
  kbl-pairs     train a text embedder on text pairs           tasks/run_pairs.py
  kbl-export    export a text-in SavedModel for TF Serving    export/export_saved_model.py
  kbl-fill-mask the most probable tokens for each [MASK]      tasks/fill_mask.py
  kbl-embed     one vector per text (sentence embeddings)     tasks/embed.py
  kbl-serve     local TF Serving-protocol gRPC server         python -m keras_bert_lite.serving
  kbl-client    send texts to a served model                  export/client.py
  kbl-demo      the whole story on shipped data               make demo"""


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m keras_bert_lite",
        description=__doc__.split(";")[0],
        epilog=TOOLS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"keras_bert_lite {_version.__version__}")
    parser.parse_args(argv)
    parser.print_help()


if __name__ == "__main__":
    main()
