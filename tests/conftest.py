"""Shared fixtures: a context with mlcir's dialects, seeded random arrays, GPU marker."""

from __future__ import annotations

import numpy as np
import pytest

from mlcir.ir import make_context
from mlcir.testing.hardware import cuda_available


@pytest.fixture
def ctx():
    context = make_context()
    with context:
        yield context


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU with the CUDA driver")
    config.addinivalue_line("markers", "slow: takes more than a few seconds")
    config.addinivalue_line("markers", "ray: starts a local Ray cluster (needs ray, unshare)")


def pytest_collection_modifyitems(items):
    if cuda_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU and libcuda.so.1; none on this machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
