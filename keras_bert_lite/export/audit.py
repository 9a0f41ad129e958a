"""Checks that every op in a SavedModel can run on a target runtime, and says where each op came from.

    python -m keras_bert_lite.export.audit exports/bert/3 --target tf-serving

Walks saved_model.pb: the "serve" MetaGraph's graph nodes and every function of its library (signature
wrappers, tf.function/Keras call functions, control-flow branches and loop bodies), following function calls
from each signature. Every node is checked, reachable from a signature or not: a model server may load any of
them. For each op that the target cannot run it reports where it is used - the call path from the signature
through the function names (which carry the tf.Module/Keras method names) to the node name (which carries
the name scopes, i.e. the layer path).

Targets:

- portable: core TensorFlow ops only. "Core" is decided by the op registry of a fresh Python process that
  imports tensorflow and nothing else (never tensorflow_text or another custom-op library), so ops of any
  extension - not just TF.Text - are caught, and nothing depends on which libraries the calling process has
  imported.
- tf-serving: core ops plus the TF.Text ops that stock TF Serving 2.12-2.19 links (`TF_SERVING_TEXT_OPS`).

Python-only ops (PyFunc, EagerPyFunc: tf.py_function / tf.numpy_function) fail both targets: they call back
into the Python process that built the model, which no model server has.

Caveat: "core" means the local TensorFlow's registry. An op added to core TensorFlow after the TF release a
TF Serving build uses would pass here and still fail to load there.
"""

import argparse
import collections
import dataclasses
import functools
import json
import os
import subprocess
import sys

from tensorflow.core.protobuf import saved_model_pb2

PORTABLE = "portable"
TF_SERVING = "tf-serving"
TARGETS = (TF_SERVING, PORTABLE)

# TF.Text ops stock TF Serving 2.12-2.19 can run. Those releases build tensorflow-text 2.12.1 into the model
# server: tensorflow_serving/workspace.bzl pins http_archive "org_tensorflow_text" (strip_prefix "text-2.12.1")
# and tensorflow_serving/model_servers/BUILD adds "@org_tensorflow_text//tensorflow_text:ops_lib" to
# SUPPORTED_TENSORFLOW_OPS; ops_lib depends on every TF.Text op library. The list is every op tensorflow-text
# 2.21 registers whose name occurs in the op libraries (*.so) of the tensorflow-text 2.12.1 wheel on PyPI.
# Newer ops are missing from those servers: TFText>RoundRobinTrim and TFText>RoundRobinGenerateMasks
# (tf_text.RoundRobinTrimmer, keras_hub's MultiSegmentPacker) and TFText>Utf8Binarize - tensorflow/serving#2267,
# #4057. TF Serving's master branch moved to tensorflow-text 2.20, so releases after 2.19 may accept more.
TF_SERVING_TEXT_OPS = frozenset(
    {
        "CaseFoldUTF8",
        "ConstrainedSequence",
        "FastBertNormalize",
        "FastWordpieceTokenizeWithOffsets",
        "FindSourceOffsets",
        "MaxSpanningTree",
        "NormalizeUTF8",
        "NormalizeUTF8WithOffsetsMap",
        "PhraseTokenize",
        "RegexSplitWithOffsets",
        "RougeL",
        "SentenceFragments",
        "SentenceFragmentsV2",
        "SentencepieceDetokenizeOp",
        "SentencepieceIdToStringOp",
        "SentencepieceOp",
        "SentencepieceStringToIdOp",
        "SentencepieceTokenizeOp",
        "SentencepieceTokenizeWithOffsetsOp",
        "SentencepieceVocabSizeOp",
        "SplitMergeTokenizeWithOffsets",
        "TFText>BoiseTagsToOffsets",
        "TFText>ByteSplitByOffsets",
        "TFText>ByteSplitWithOffsets",
        "TFText>FastSentencepieceDetokenize",
        "TFText>FastSentencepieceTokenize",
        "TFText>FastWordpieceDetokenize",
        "TFText>NgramsStringJoin",
        "TFText>OffsetsToBoiseTags",
        "TFText>PhraseDetokenize",
        "TFText>WhitespaceTokenizeWithOffsetsV2",
        "TokenizerFromLogits",
        "UnicodeScriptTokenizeWithOffsets",
        "WhitespaceTokenizeWithOffsets",
        "WordpieceTokenizeWithOffsets",
    }
)

PYTHON_ONLY_OPS = frozenset({"PyFunc", "PyFuncStateless", "EagerPyFunc"})

_ROUND_ROBIN_HINT = (
    "used by tf_text.RoundRobinTrimmer and keras_hub's MultiSegmentPacker in recent tensorflow-text; "
    "TF Serving <= 2.19 links tensorflow-text 2.12.1, which lacks it (tensorflow/serving#2267). "
    "Trim the segments with core ops instead."
)
HINTS = {
    "TFText>RoundRobinTrim": _ROUND_ROBIN_HINT,
    "TFText>RoundRobinGenerateMasks": _ROUND_ROBIN_HINT,
    "TFText>Utf8Binarize": "tf_text.utf8_binarize is newer than the tensorflow-text 2.12.1 TF Serving <= 2.19 links.",
    "PyFunc": "tf.numpy_function/tf.py_function run Python code, which no model server has.",
    "EagerPyFunc": "tf.py_function runs Python code, which no model server has.",
}

_CORE_OPS_SCRIPT = """
import json, sys
from keras_bert_lite.utils.tf_internals import registered_op_names
assert "tensorflow_text" not in sys.modules, "tensorflow_text was imported"
print(json.dumps(registered_op_names()))
"""


@dataclasses.dataclass
class AuditReport:
    """The result of `audit_saved_model`.

    Attributes:
        path: The SavedModel directory.
        target: "portable" or "tf-serving".
        ops: Every distinct op in the SavedModel, sorted.
        signatures: {signature key: sorted ops it runs, through every function it calls}.
        functions: {function name: sorted ops its own nodes use}.
        offending: {op the target cannot run: ["signature > function > ...: node 'scope/name'", ...]}.
    """

    path: str
    target: str
    ops: list
    signatures: dict
    functions: dict
    offending: dict

    @property
    def ok(self):
        return not self.offending

    def format(self):
        """A human-readable report: ops per signature and per function, offending ops marked, then where."""
        verdict = "PASS" if self.ok else f"FAIL ({len(self.offending)} op(s) it cannot run)"
        lines = [f"SavedModel {self.path}: {len(self.ops)} distinct ops, target {self.target}: {verdict}", ""]
        lines += [f"signature '{key}': {self._op_list(ops)}" for key, ops in sorted(self.signatures.items())]
        lines += ["", "functions:"]
        lines += [f"  {name}: {self._op_list(ops)}" for name, ops in sorted(self.functions.items())]
        if self.offending:
            lines += ["", f"not available on {self.target}:"]
            for op, places in sorted(self.offending.items()):
                lines.append(f"  {op}" + (f" - {HINTS[op]}" if op in HINTS else ""))
                lines += [f"    used at {place}" for place in places]
        return "\n".join(lines)

    def _op_list(self, ops):
        return ", ".join(f"{op} [NOT ALLOWED]" if op in self.offending else op for op in ops) or "(no ops)"


def audit_saved_model(path, target=TF_SERVING):
    """Audits the SavedModel in directory `path` for `target` ("tf-serving" or "portable")."""
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; expected one of {TARGETS}")
    graph = _FunctionGraph(_serving_meta_graph(path))
    allowed = allowed_ops(target)
    places = graph.op_places()
    return AuditReport(
        path=path,
        target=target,
        ops=sorted(places),
        signatures={key: sorted(ops) for key, ops in graph.signature_ops().items()},
        functions={name: sorted({op for op, _ in uses}) for name, uses in graph.function_uses.items()},
        offending={op: where for op, where in sorted(places.items()) if op not in allowed},
    )


def allowed_ops(target):
    """The set of op names `target` can run."""
    text_ops = TF_SERVING_TEXT_OPS if target == TF_SERVING else frozenset()
    return (core_ops() | text_ops) - PYTHON_ONLY_OPS


@functools.lru_cache(maxsize=None)
def core_ops():
    """Op names registered by `import tensorflow` alone, listed by a fresh subprocess (cached per process)."""
    result = subprocess.run(
        [sys.executable, "-P", "-c", _CORE_OPS_SCRIPT],
        capture_output=True,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
        timeout=600,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"could not list the core TensorFlow ops in a subprocess ({sys.executable}):\n{result.stderr[-2000:]}"
        )
    return frozenset(json.loads(result.stdout.strip().splitlines()[-1]))


class _FunctionGraph:
    """The nodes and functions of a MetaGraphDef, with the calls between them."""

    def __init__(self, meta_graph):
        self.meta_graph = meta_graph
        library = meta_graph.graph_def.library
        self.names = {function.signature.name for function in library.function}
        self.function_uses = {}  # function -> [(op, node name)] of its own non-call nodes
        self.function_calls = {}  # function -> functions its nodes call (as op, or in func attrs)
        for function in library.function:
            name = function.signature.name
            self.function_uses[name] = [(node.op, node.name) for node in function.node_def if node.op not in self.names]
            self.function_calls[name] = sorted({callee for node in function.node_def for callee in self._callees(node)})
        self.nodes = {node.name: node for node in meta_graph.graph_def.node}

    def _callees(self, node):
        if node.op in self.names:
            yield node.op
        for value in node.attr.values():
            if value.HasField("func"):
                yield value.func.name
            yield from (function.name for function in value.list.func)

    def signature_roots(self):
        """{signature key: top-level node names it needs}, walking back from its outputs through node inputs."""
        roots = {}
        for key, signature in self.meta_graph.signature_def.items():
            pending = [info.name.split(":")[0] for info in signature.outputs.values()]
            seen = set()
            while pending:
                name = pending.pop()
                if name in seen or name not in self.nodes:
                    continue
                seen.add(name)
                pending += [source.lstrip("^").split(":")[0] for source in self.nodes[name].input]
            roots[key] = sorted(seen)
        return roots

    def call_paths(self, start_functions):
        """{function: shortest call path (tuple of function names) from one of `start_functions`}."""
        paths = {name: (name,) for name in start_functions if name in self.function_uses}
        queue = collections.deque(paths)
        while queue:
            caller = queue.popleft()
            for callee in self.function_calls[caller]:
                if callee in self.function_uses and callee not in paths:
                    paths[callee] = paths[caller] + (callee,)
                    queue.append(callee)
        return paths

    def signature_ops(self):
        result = {}
        for key, node_names in self.signature_roots().items():
            nodes = [self.nodes[name] for name in node_names]
            ops = {node.op for node in nodes if node.op not in self.names}
            for function in self.call_paths([callee for node in nodes for callee in self._callees(node)]):
                ops.update(op for op, _ in self.function_uses[function])
            result[key] = ops
        return result

    def op_places(self):
        """{op: ["<signature> > <f1> > <f2>: node '<name>'", ...]} for every node of the graph and library."""
        places = collections.defaultdict(list)
        reached = {}
        for key, node_names in sorted(self.signature_roots().items()):
            for name in node_names:
                node = self.nodes[name]
                if node.op not in self.names:
                    places[node.op].append(f"{key}: node '{name}'")
                for function, path in self.call_paths(list(self._callees(node))).items():
                    reached.setdefault(function, f"{key} > " + " > ".join(path))
        in_signatures = {name for names in self.signature_roots().values() for name in names}
        for name, node in self.nodes.items():
            if name not in in_signatures and node.op not in self.names:
                places[node.op].append(f"graph (no signature): node '{name}'")
        for function, uses in sorted(self.function_uses.items()):
            where = reached.get(function, f"{function} (not called from any signature)")
            for op, node_name in uses:
                places[op].append(f"{where}: node '{node_name}'")
        return dict(places)


def _serving_meta_graph(path):
    pb = os.path.join(path, "saved_model.pb")
    if not os.path.isfile(pb):
        raise FileNotFoundError(f"{path} is not a SavedModel directory: {pb} does not exist")
    with open(pb, "rb") as f:
        saved_model = saved_model_pb2.SavedModel.FromString(f.read())
    for meta_graph in saved_model.meta_graphs:
        if "serve" in meta_graph.meta_info_def.tags:
            return meta_graph
    raise ValueError(
        f"{pb} has no MetaGraph tagged 'serve' (tags: {[list(m.meta_info_def.tags) for m in saved_model.meta_graphs]})"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m keras_bert_lite.export.audit",
        description="Check that a SavedModel only uses ops the target can run.",
    )
    parser.add_argument("path", help="SavedModel directory (the one holding saved_model.pb)")
    parser.add_argument(
        "--target",
        choices=TARGETS,
        default=TF_SERVING,
        help="tf-serving: core TF + the TF.Text ops of stock TF Serving 2.12-2.19 (default); "
        "portable: core TF ops only",
    )
    args = parser.parse_args(argv)
    try:
        report = audit_saved_model(args.path, args.target)
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(report.format())
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
