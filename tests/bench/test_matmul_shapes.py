"""bench/matmul_shapes.py: the products it times are exactly the encoder's (no runs here)."""

import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ms():
    spec = importlib.util.spec_from_file_location("matmul_shapes", ROOT / "bench" / "matmul_shapes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("preset", ["tiny", "mini", "small", "base"])
def test_layer_products_add_up_to_the_forward_flops(ms, preset):
    """One layer's timed products x layers = the encoder's matmul FLOPs per batch (pooler aside)."""
    common = ms.common
    per_layer = sum(ms.flops(shape) for shape in ms.layer_shapes(preset).values())
    h = common.shape(preset)["hidden"]
    expected = ms.BATCH * (common.forward_flops(preset, ms.SEQ) - 2 * h * h)
    assert per_layer * common.shape(preset)["layers"] == expected


def test_shapes_are_the_tiny_encoders(ms):
    shapes = ms.layer_shapes("tiny")  # H 128, 2 heads of 64, FFN 512, 32 x 128 tokens
    assert shapes["qkv"] == (None, 4096, 128, 384)
    assert shapes["ffn out"] == (None, 4096, 512, 128)
    assert shapes["scores"] == (64, 128, 64, 128)
    assert shapes["context"] == (64, 128, 128, 64)
