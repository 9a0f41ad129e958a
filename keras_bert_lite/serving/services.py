"""The gRPC services: tensorflow.serving.PredictionService and tensorflow.serving.ModelService.

Predict and Classify convert inputs and run the model, so they run on a worker thread and must be admitted
(see `workers`); GetModelMetadata, GetModelStatus and the unimplemented methods answer from the event loop.
The REST front end (`rest_api`) calls the same methods (`predict`, `classify`, `metadata`, `status`, ...)
with the request protos it builds from JSON: one request path for both.
"""

from tensorflow_serving.apis import model_service_pb2, prediction_service_pb2

from keras_bert_lite.serving.classify import run_classify
from keras_bert_lite.serving.errors import unimplemented
from keras_bert_lite.serving.metadata import model_metadata
from keras_bert_lite.serving.model_status import model_status
from keras_bert_lite.serving.predict import run_predict
from keras_bert_lite.serving.rpc import service_handler


class PredictionService:
    """Predict, Classify and GetModelMetadata; Regress and MultiInference answer UNIMPLEMENTED.

    Args:
        models: The `ModelRegistry` whose `servable` resolves each request's model spec.
        answerer: The `Answerer` that admits, runs and logs calls.
        limits: The `RequestLimits` every request is checked against.
        batcher: A `Batcher` merging concurrent Predict requests, or None to run each request alone.
    """

    def __init__(self, models, answerer, limits, batcher=None):
        self._models = models
        self._answer = answerer.answer
        self._limits = limits
        self._batcher = batcher

    def handler(self):
        """The gRPC handler that routes the service's methods here."""
        return service_handler(
            prediction_service_pb2.DESCRIPTOR.services_by_name["PredictionService"],
            {
                "Predict": self.Predict,
                "Classify": self.Classify,
                "GetModelMetadata": self.GetModelMetadata,
                "Regress": self.Regress,
                "MultiInference": self.MultiInference,
            },
        )

    async def Predict(self, received, context):
        return await self._answer("Predict", received, context, self.predict)

    async def Classify(self, received, context):
        return await self._answer("Classify", received, context, self.classify)

    async def GetModelMetadata(self, received, context):
        return await self._answer("GetModelMetadata", received, context, self.metadata, on_worker=False)

    async def Regress(self, received, context):
        return await self._answer("Regress", received, context, self.regress, on_worker=False)

    async def MultiInference(self, received, context):
        return await self._answer(
            "MultiInference", received, context, _unimplemented("MultiInference"), on_worker=False
        )

    @property
    def limits(self):
        """The `RequestLimits` requests are checked against."""
        return self._limits

    def servable(self, model_spec):
        """The `Servable` a `ModelSpec` asks for (NOT_FOUND when none is served)."""
        return self._models.servable(model_spec)

    def predict(self, request, call):
        """Answers a `PredictRequest`: what Predict does for every front end, on a worker thread."""
        servable = self.servable(request.model_spec)
        return run_predict(servable, request, self._limits, self._runner(call, servable.name))

    def classify(self, request, call):
        """Answers a `ClassificationRequest`, on a worker thread."""
        return run_classify(
            self.servable(request.model_spec),
            request,
            self._limits,
            lambda signature, inputs: run_alone(signature, inputs, call),
        )

    def regress(self, request, call):
        """Refuses a `RegressionRequest` (UNIMPLEMENTED)."""
        return _unimplemented("Regress")(request, call)

    def metadata(self, request, call):
        """Answers a `GetModelMetadataRequest`, from the event loop."""
        return model_metadata(self._models, request)

    def _runner(self, call, model_name):
        if self._batcher is None:
            return lambda signature, inputs: run_alone(signature, inputs, call)
        return lambda signature, inputs: self._batcher.run(signature, inputs, call, model_name)


class ModelService:
    """GetModelStatus; HandleReloadConfigRequest answers UNIMPLEMENTED (models are configured by flags or by
    --model_config_file, which the server re-reads)."""

    def __init__(self, models, answerer):
        self._models = models
        self._answer = answerer.answer

    def handler(self):
        """The gRPC handler that routes the service's methods here."""
        return service_handler(
            model_service_pb2.DESCRIPTOR.services_by_name["ModelService"],
            {"GetModelStatus": self.GetModelStatus, "HandleReloadConfigRequest": self.HandleReloadConfigRequest},
        )

    async def GetModelStatus(self, received, context):
        return await self._answer("GetModelStatus", received, context, self.status, on_worker=False)

    async def HandleReloadConfigRequest(self, received, context):
        def refuse(request, call):
            raise unimplemented(
                "HandleReloadConfigRequest is not supported: edit the --model_config_file, which "
                "the server re-reads every --model_config_file_poll_wait_seconds"
            )

        return await self._answer("HandleReloadConfigRequest", received, context, refuse, on_worker=False)

    def status(self, request, call):
        """Answers a `GetModelStatusRequest`, from the event loop."""
        return model_status(self._models, request)


def run_alone(signature, inputs, call):
    """Runs `signature` on `inputs` unless the caller of `call` is gone."""
    call.check()
    return signature.run(inputs)


def _unimplemented(method):
    def refuse(request, call):
        raise unimplemented(f"{method} is not supported by keras_bert_lite.serving; use Predict or Classify")

    return refuse
