"""What `bench/compare_peers.py` compares: the implementations and their modes, the shapes the model benchmarks
run at (`--shapes`), and the acceptance bars. Stdlib only; the orchestrator imports it, the runners need not.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import common

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------------------------------ implementations


@dataclasses.dataclass(frozen=True)
class Implementation:
    """One library under test: its runner script and (for peers) its isolated venv."""

    name: str
    label: str
    venv: str | None = None  # under bench/.venvs; None: the Python running this script
    packages: tuple[str, ...] = ()  # pip requirements of the venv
    imports: str = ""  # modules that must import for the venv to count as present

    @property
    def python(self) -> str:
        return sys.executable if self.venv is None else str(ROOT / "bench" / ".venvs" / self.venv / "bin" / "python")


IMPLEMENTATIONS = {
    "ours": Implementation("ours", "ours"),
    # torch==2.13.0 is the CPU wheel on local disk; any other version would download gigabytes.
    "hf": Implementation(
        "hf", "HF", "hf", ("torch==2.13.0", "transformers", "safetensors"), "torch, transformers, tokenizers"
    ),
    "kerashub": Implementation(
        "kerashub",
        "KerasHub",
        "kerashub",
        ("tensorflow==2.21.0", "keras==3.15.1", "keras-hub==0.32.0", "tensorflow-text==2.21.*"),
        "tensorflow, keras_hub, tensorflow_text",
    ),
}

# benchmark -> implementation -> modes (the runners' vocabulary).
MODES = {
    "peak": {"ours": ["tf.matmul"], "hf": ["torch.matmul"]},
    "forward": {"ours": ["graph", "xla"], "hf": ["eager", "compile"], "kerashub": ["graph", "xla"]},
    "pretrain": {"ours": ["graph", "xla"], "hf": ["eager", "compile"], "kerashub": ["graph", "xla"]},
    "finetune": {"ours": ["graph", "xla"], "hf": ["eager"], "kerashub": ["default"]},
    "tokenize": {"ours": ["default"], "hf": ["fast"], "kerashub": ["default"]},
    "serving": {"ours": ["savedmodel", "bare", "paired"], "hf": ["eager"], "kerashub": ["tf.function", "savedmodel"]},
}
BENCHMARKS = ("forward", "pretrain", "finetune", "tokenize", "serving")
MODEL_BENCHMARKS = ("forward", "pretrain")  # synthetic inputs; the others read the shared real text
SHAPED = MODEL_BENCHMARKS + ("peak",)  # run at each --shapes shape (the peak: at its precision)
BATCH, SEQ = 32, 128  # the text benchmarks' batch; the default shape
UNITS = {"forward": "seq/s", "pretrain": "seq/s", "finetune": "examples/s", "tokenize": "lines/s"}


# ------------------------------------------------------------------------------------------ shapes


@dataclasses.dataclass(frozen=True)
class Shape:
    """A sequence length and precision the model benchmarks (and the matmul peak, at its precision) run at."""

    seq: int = SEQ
    precision: str = "float32"

    @property
    def batch(self) -> int:
        """32 up to seq 128; 8 beyond (seq 512: 4,096 tokens a batch, as 32 x 128; what a 2-core CPU finishes in
        seconds, and the batch of the issue's long-sequence forward)."""
        return BATCH if self.seq <= SEQ else 8

    @property
    def predictions(self) -> int:
        """Masked-LM predictions per sequence: 15% of the tokens rounded up to a multiple of 10, at most 80 —
        google-research/bert's max_predictions_per_seq at 128 and 512 (20, 80); 60 at 384."""
        return min(80, 10 * -(-15 * self.seq // 1000))

    def __str__(self) -> str:
        """The --shapes spelling: "512", "128:bf16"."""
        return str(self.seq) + ("" if self.precision == "float32" else ":bf16")

    @property
    def title(self) -> str:
        return f"seq {self.seq} {self.precision}, batch {self.batch}"


PRECISIONS = {"": "float32", "fp32": "float32", "float32": "float32", "bf16": "bfloat16", "bfloat16": "bfloat16"}
BF16_FLAGS = ("avx512_bf16", "amx_bf16")  # /proc/cpuinfo flags of CPUs with bf16 instructions


def parse_shapes(text: str) -> list[Shape]:
    """ "128,384,512,128:bf16" -> the Shapes, in order, duplicates dropped; ValueError on a bad item."""
    shapes = []
    for item in (t.strip() for t in text.split(",")):
        seq, _, precision = item.partition(":")
        if not seq.isdigit() or not 16 <= int(seq) <= common.MAX_POSITIONS or precision not in PRECISIONS:
            raise ValueError(
                f"bad shape {item!r}: SEQ[:PRECISION], SEQ 16..{common.MAX_POSITIONS}, PRECISION fp32 (default) or bf16"
            )
        shapes.append(Shape(int(seq), PRECISIONS[precision]))
    return list(dict.fromkeys(shapes))


def default_shape(device: str) -> Shape:
    """seq 128 in float32 on CPUs, in bfloat16 on GPUs: the shape of the BARS below."""
    return Shape(SEQ, "bfloat16" if device == "gpu" else "float32")


def shapes_of(args) -> list[Shape]:
    """--shapes (parsed by main), else the device's default shape alone."""
    return list(getattr(args, "shapes", None) or [default_shape(args.device)])


def bf16_instructions() -> list[str]:
    """Which of BF16_FLAGS this CPU has (empty: bfloat16 is emulated in float32 units)."""
    flags = (common.cpuinfo("flags") or "").split()
    return [flag for flag in BF16_FLAGS if flag in flags]


# ------------------------------------------------------------------------------------------ acceptance bars


@dataclasses.dataclass(frozen=True)
class Bar:
    """ours (default) / the best of `peers` must reach `need` (per preset; key None = every other preset)."""

    name: str
    peers: tuple[tuple[str, str], ...]  # (implementation, mode); empty = every peer column
    need: dict

    def threshold(self, preset):
        return self.need.get(preset, self.need.get(None))


BARS = {
    "forward": [Bar("best peer", (), {None: 1.05, "base": 0.98})],
    "pretrain": [
        Bar("HF", (("hf", "eager"), ("hf", "compile")), {None: 1.1}),
        Bar("KerasHub graph", (("kerashub", "graph"),), {None: 1.3}),
    ],
    "finetune": [
        Bar("KerasHub default", (("kerashub", "default"),), {None: 2.0}),
        Bar("HF", (("hf", "eager"),), {None: 1.3}),
    ],
    "tokenize": [
        Bar("HF fast", (("hf", "fast"),), {None: 5.0}),
        Bar("KerasHub", (("kerashub", "default"),), {None: None}),
    ],
}
MFU_NEED = {"base": 0.90}  # forward at the default shape: ours (default) at base, 90% of the matmul peak
SERVING_OVERHEAD_MAX = 0.20  # serving_default (text in) over the bare classifier, p50, at tiny
# Issue 37, on CPUs: at these shapes the forward and the pretraining step reach this ratio to the best peer (of
# the same precision) at every preset; bfloat16 ones only where the CPU has bf16 instructions.
SHAPE_BARS = {Shape(384): 1.05, Shape(512): 1.05, Shape(128, "bfloat16"): 1.05}


def bars_for(bench: str, shape: Shape | None, device: str = "cpu", bf16_native: bool = True) -> list[Bar]:
    """The bars of one (benchmark, shape) table: BARS at the device's default shape (and for the benchmarks that
    have no shape); at SHAPE_BARS' shapes the best peer; at any other shape (or bf16 on a CPU without bf16
    instructions) the ratio to the best peer without a bar."""
    if shape is None or shape == default_shape(device):
        return BARS.get(bench, [])
    need = SHAPE_BARS.get(shape) if device == "cpu" else None
    if shape.precision == "bfloat16" and not bf16_native:
        need = None
    return [Bar("best peer", (), {None: need})]
