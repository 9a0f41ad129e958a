"""TF Serving's REST URLs (its `http_rest_api_util.cc` patterns), read into the API called and its ModelSpec.

    POST /v1/models/<name>[/versions/<v> | /labels/<l>]:(predict|classify|regress)
    GET  /v1/models/<name>[/versions/<v> | /labels/<l>][/metadata]

As in TF Serving the patterns ignore case, while the API name after ":" must be lower case; the model name and
label are percent-decoded. A path under /v1/ that fits neither pattern (or a method other than these) is
INVALID_ARGUMENT ("Malformed request", HTTP 400); any other path is NOT_FOUND (404).
"""

import dataclasses
import re
import urllib.parse

from keras_bert_lite.serving.errors import invalid_argument, not_found

PREDICTION_PATH = re.compile(
    r"/v1/models/([^/:]+)(?:/versions/([0-9]+)|/labels/([^/:]+))?"
    r":(classify|regress|predict)",
    re.IGNORECASE,
)
MODEL_PATH = re.compile(
    r"/v1/models(?:/([^/:]+))?(?:/versions/([0-9]+)|/labels/([^/:]+))?(?:/(metadata))?", re.IGNORECASE
)
API_PREFIX = re.compile(r"/v1/.*", re.IGNORECASE | re.DOTALL)
POST_APIS = ("predict", "classify", "regress")
METADATA = "metadata"
STATUS = "status"
MAX_VERSION = 2**63 - 1


@dataclasses.dataclass(frozen=True)
class Route:
    """What a REST URL asks for.

    Attributes:
        api: "predict", "classify", "regress", "metadata" or "status".
        model: The model name.
        version: The version number, or None.
        label: The version label, or None.
    """

    api: str
    model: str
    version: int = None
    label: str = None

    def fill(self, model_spec):
        """Writes the model name, version and label into a `ModelSpec`."""
        model_spec.name = self.model
        if self.version is not None:
            model_spec.version.value = self.version
        if self.label is not None:
            model_spec.version_label = self.label


def route(http_method, raw_path):
    """The `Route` of a request, from its method and its path as sent (still percent-encoded, no query).

    Raises:
        ServingError: NOT_FOUND outside /v1/; INVALID_ARGUMENT for a malformed request under it, a model name
            or label that does not decode, or a version beyond int64.
    """
    if not API_PREFIX.fullmatch(raw_path):
        raise not_found(f"no such path: {raw_path} (TF Serving's REST API is under /v1/models/)")
    pattern = {"POST": PREDICTION_PATH, "GET": MODEL_PATH}.get(http_method)
    match = pattern.fullmatch(raw_path) if pattern is not None else None
    if match is None or (http_method == "POST" and match.group(4) not in POST_APIS):
        raise invalid_argument(f"Malformed request: {http_method} {raw_path}")
    name, version, label, last = match.groups()
    if not name:
        raise invalid_argument("Missing model name in request.")
    api = last if http_method == "POST" else METADATA if last == METADATA else STATUS
    return Route(api, _decoded(name, "model name"), _version(version), label and _decoded(label, "model version label"))


def _decoded(text, what):
    try:
        return urllib.parse.unquote(text, errors="strict")
    except UnicodeDecodeError:
        raise invalid_argument(f"Failed to decode {what}:{text}") from None


def _version(text):
    if text is None:
        return None
    if len(text.lstrip("0")) > len(str(MAX_VERSION)) or int(text) > MAX_VERSION:
        raise invalid_argument(f"Failed to convert version: {text} to numeric.")
    return int(text)
