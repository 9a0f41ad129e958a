"""The gRPC servicers: tensorflow.serving.PredictionService and tensorflow.serving.ModelService."""

import grpc
from tensorflow_serving.apis import model_service_pb2_grpc, prediction_service_pb2_grpc

from keras_bert_lite.serving.classify import run_classify
from keras_bert_lite.serving.metadata import model_metadata
from keras_bert_lite.serving.model_status import model_status
from keras_bert_lite.serving.predict import run_predict
from keras_bert_lite.serving.rpc import answer


class PredictionService(prediction_service_pb2_grpc.PredictionServiceServicer):
    """Predict, Classify and GetModelMetadata; Regress and MultiInference answer UNIMPLEMENTED.

    Args:
        manager: The `ModelManager` holding the served version.
        batcher: A `Batcher` merging concurrent Predict requests, or None to run each request alone.
    """

    def __init__(self, manager, batcher=None):
        self._manager = manager
        self._run = batcher.run if batcher is not None else _run_alone

    def Predict(self, request, context):
        return answer(context, request,
                      lambda: run_predict(self._manager.servable(request.model_spec), request, self._run))

    def Classify(self, request, context):
        return answer(context, request, lambda: run_classify(self._manager.servable(request.model_spec), request))

    def GetModelMetadata(self, request, context):
        return answer(context, request, lambda: model_metadata(self._manager, request))

    def Regress(self, request, context):
        context.abort(grpc.StatusCode.UNIMPLEMENTED,
                      "Regress is not supported by keras_bert_lite.serving; use Predict or Classify")

    def MultiInference(self, request, context):
        context.abort(grpc.StatusCode.UNIMPLEMENTED,
                      "MultiInference is not supported by keras_bert_lite.serving; use Predict or Classify")


class ModelService(model_service_pb2_grpc.ModelServiceServicer):
    """GetModelStatus; HandleReloadConfigRequest answers UNIMPLEMENTED (one model, configured by flags)."""

    def __init__(self, manager):
        self._manager = manager

    def GetModelStatus(self, request, context):
        return answer(context, request, lambda: model_status(self._manager, request))

    def HandleReloadConfigRequest(self, request, context):
        context.abort(grpc.StatusCode.UNIMPLEMENTED,
                      "HandleReloadConfigRequest is not supported: this server serves the one model given by "
                      "--model_name/--model_base_path")


def _run_alone(signature, inputs):
    return signature.run(inputs)
