"""Send texts to a TF Serving model; one JSON object per text. See keras_bert_lite/serving/client_cli.py or --help."""

import sys

from keras_bert_lite.serving.client_cli import main

if __name__ == "__main__":
    sys.exit(main())
