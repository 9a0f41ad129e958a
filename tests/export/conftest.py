"""Fixtures for the export tests."""

import pytest


@pytest.fixture(autouse=True)
def _fresh_keras_state():
    """Replaces the root conftest's per-test Keras reset (~0.2 s each): the audit tests never touch Keras state."""
    yield
