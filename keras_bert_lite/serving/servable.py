"""One loaded version of a SavedModel: its SignatureDefs and the functions that run them."""

import os

import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

SERVING_TAG = "serve"


class Signature:
    """A named signature of a loaded version: its `SignatureDef`, input/output specs and the function to run.

    Attributes:
        name: The signature key, e.g. "serving_default".
        signature_def: The `SignatureDef` proto from saved_model.pb.
        inputs: {input key: tf.TensorSpec} from the SignatureDef.
        outputs: {output key: tf.TensorSpec} from the SignatureDef.
        batchable: Whether requests may be merged along dim 0 (see `is_batchable`). The batcher clears it if
            a merged run ever returns outputs it cannot split.
    """

    def __init__(self, name, signature_def, function):
        self.name = name
        self.signature_def = signature_def
        self.inputs = {key: _spec(key, info) for key, info in signature_def.inputs.items()}
        self.outputs = {key: _spec(key, info) for key, info in signature_def.outputs.items()}
        self.batchable = is_batchable(self.inputs, self.outputs)
        self._function = function

    def run(self, inputs):
        """Runs the signature on {key: np.ndarray} (already validated) and returns {key: np.ndarray}.

        Raises:
            tf.errors.OpError: The model's error, e.g. `InvalidArgumentError` for input an op rejects (see
                `undecodable_tf_error` for one whose message is not UTF-8).
        """
        tensors = {key: tf.constant(value, dtype=self.inputs[key].dtype) for key, value in inputs.items()}
        try:
            outputs = self._function(**tensors)
        except UnicodeDecodeError as error:
            raise undecodable_tf_error(error) from None
        return {key: value.numpy() for key, value in outputs.items()}


class Servable:
    """A loaded SavedModel version. Thread-safe: signature functions can be called concurrently.

    Attributes:
        name: The model name it is served under.
        version: The integer version (the directory name under the model base path).
        path: The version directory.
        signature_defs: Every SignatureDef of the "serve" MetaGraph, as TF Serving reports them in
            GetModelMetadata (including "__saved_model_init_op").
        signatures: {key: Signature} for the signatures that can be run.
    """

    def __init__(self, name, version, path, signature_defs, signatures, saved_model):
        self.name = name
        self.version = version
        self.path = path
        self.signature_defs = signature_defs
        self.signatures = signatures
        self._saved_model = saved_model  # keeps the variables and resources alive while the version is served


def load_servable(name, version, path):
    """Loads `path` (a SavedModel directory) as version `version` of model `name`."""
    signature_defs = dict(read_serving_meta_graph(path).signature_def)
    saved_model = tf.saved_model.load(path, tags=[SERVING_TAG])
    signatures = {
        key: Signature(key, signature_defs[key], function) for key, function in saved_model.signatures.items()
    }
    return Servable(name, version, path, signature_defs, signatures, saved_model)


def read_serving_meta_graph(path):
    """The MetaGraphDef tagged "serve" in `path`/saved_model.pb."""
    with open(os.path.join(path, "saved_model.pb"), "rb") as f:
        saved_model = saved_model_pb2.SavedModel.FromString(f.read())
    for meta_graph in saved_model.meta_graphs:
        if SERVING_TAG in meta_graph.meta_info_def.tags:
            return meta_graph
    raise ValueError(f"{path}/saved_model.pb has no MetaGraph tagged '{SERVING_TAG}'")


def is_batchable(inputs, outputs):
    """Whether requests to a signature can be merged along dim 0 and its outputs split back.

    Every input and output must have a leading batch dimension of unknown size. Outputs must also have fully
    known trailing dimensions: an output like [batch, None] (e.g. token ids padded to the longest sequence in
    the batch) would change with the other requests merged into the batch, so such signatures run alone.
    """
    if not inputs or not outputs:
        return False
    for spec in inputs.values():
        if spec.shape.rank is None or spec.shape.rank == 0 or spec.shape[0] is not None:
            return False
    for spec in outputs.values():
        if (
            spec.shape.rank is None
            or spec.shape.rank == 0
            or spec.shape[0] is not None
            or not spec.shape[1:].is_fully_defined()
        ):
            return False
    return True


def undecodable_tf_error(error):
    """The `InvalidArgumentError` for a TensorFlow error whose message could not be decoded.

    TensorFlow turns an op's failed status into an exception by decoding its message as strict UTF-8; when the
    op echoed request bytes that are not UTF-8 (e.g. ParseExample quoting a string that is not a serialized
    tf.Example), Python gets that `UnicodeDecodeError` instead, and the status code is lost with it. TensorFlow's
    own text is UTF-8, so the undecodable bytes are request data an op rejected: INVALID_ARGUMENT, with the
    message decoded leniently (undecodable bytes shown as \\xNN escapes).

    Args:
        error: The `UnicodeDecodeError` raised while calling a signature function; its `object` holds the
            message's bytes.
    """
    raw = error.object if isinstance(error.object, (bytes, bytearray)) else str(error).encode()
    return tf.errors.InvalidArgumentError(None, None, bytes(raw).decode("utf-8", "backslashreplace"))


def _spec(key, tensor_info):
    return tf.TensorSpec(tf.TensorShape(tensor_info.tensor_shape), tf.as_dtype(tensor_info.dtype), name=key)
