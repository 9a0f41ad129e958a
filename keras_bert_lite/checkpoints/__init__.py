"""Loading models: `load`, the one loader, and the checkpoint formats it reads.

Hugging Face safetensors and original google-research/bert TF1 checkpoints are imported through one name table
(`names`), strictly: a checkpoint variable that nothing consumes, a weight that finds no variable, or a shape
mismatch raises a `CheckpointMismatchError` listing all of them. Our own `.keras` files and run directories are
read as saved. A model argument may also be a Hugging Face Hub name or an original `.zip` archive
(`hf_hub.resolve_model`).

Modules: `names` (the name table), `weights` (arrays into and out of a model by it), `locate` (which files),
`readers` (reading them), `loader` (`load`, and the former entry points as its wrappers), `task_loaders`
(`load_masked_lm`, `load_embedder`, `load_trained`).
"""

from keras_bert_lite.checkpoints.loader import load, load_encoder, load_keras_file, load_pretrainer
from keras_bert_lite.checkpoints.names import HF_TASK_HEADS, TF1_TASK_HEADS, CheckpointMismatchError
from keras_bert_lite.checkpoints.readers import read_checkpoint
from keras_bert_lite.checkpoints.task_loaders import embedding_settings, load_embedder, load_masked_lm, load_trained
from keras_bert_lite.checkpoints.weights import assign_weights, hf_tensors

__all__ = [
    "CheckpointMismatchError",
    "HF_TASK_HEADS",
    "TF1_TASK_HEADS",
    "assign_weights",
    "embedding_settings",
    "hf_tensors",
    "load",
    "load_embedder",
    "load_encoder",
    "load_keras_file",
    "load_masked_lm",
    "load_pretrainer",
    "load_trained",
    "read_checkpoint",
]
