"""Raw tensorflow-serving-api stubs and requests, for tests that send what ServingClient never would."""

import grpc
import tensorflow as tf
from tensorflow.core.framework import tensor_pb2
from tensorflow_serving.apis import model_service_pb2_grpc, predict_pb2, prediction_service_pb2_grpc


def prediction_stub(address):
    return prediction_service_pb2_grpc.PredictionServiceStub(grpc.insecure_channel(address))


def model_stub(address):
    return model_service_pb2_grpc.ModelServiceStub(grpc.insecure_channel(address))


def predict_request(inputs, model="toy", signature="", version=None, output_filter=()):
    """A PredictRequest; `inputs` maps keys to anything `tf.make_tensor_proto` takes (or TensorProtos)."""
    request = predict_pb2.PredictRequest(output_filter=list(output_filter))
    request.model_spec.name = model
    request.model_spec.signature_name = signature
    if version is not None:
        request.model_spec.version.value = version
    for key, value in inputs.items():
        request.inputs[key].CopyFrom(
            value if isinstance(value, tensor_pb2.TensorProto) else tf.make_tensor_proto(value)
        )
    return request


def rpc_error(call, request, timeout=30):
    """Calls `call(request)` expecting a failure; returns the grpc.RpcError."""
    try:
        call(request, timeout=timeout)
    except grpc.RpcError as error:
        return error
    raise AssertionError(f"expected {call} to fail for {request}")
