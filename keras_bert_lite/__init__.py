"""keras_bert_lite: BERT (Devlin et al., 2018) for TensorFlow and Keras 3.

    import keras_bert_lite as kbl
    encoder = kbl.load_encoder("path/to/hf_or_tf1_checkpoint_dir")
    model = kbl.build_classifier(encoder, num_classes=2)

Subpackages: `text` (vocab, tokenizer, packer), `data` (pretraining pipeline), `training` (optimizers,
strategies, loops, job runners), `export` (SavedModels for TF Serving), `serving` (gRPC server and client).
"""

from keras_bert_lite import _cpu_kernels  # noqa: F401  (must run before TensorFlow is imported: see there)
from keras_bert_lite._version import __version__

from keras_bert_lite.checkpoints import load_encoder, load_pretrainer
from keras_bert_lite.config import BertConfig
from keras_bert_lite.models import (BertPretrainer, build_classifier, build_encoder, build_multiple_choice,
                                    build_pretrainer, build_span_labeler, build_token_classifier, encoder_config,
                                    inference_function)

__all__ = ["__version__", "BertConfig", "BertPretrainer", "build_encoder", "build_pretrainer", "build_classifier",
           "build_token_classifier", "build_span_labeler", "build_multiple_choice", "encoder_config",
           "load_encoder", "load_pretrainer", "inference_function"]
