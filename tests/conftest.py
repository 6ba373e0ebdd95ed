"""Shared fixtures: a context with mlcir's dialects, seeded random arrays, GPU and QEMU
markers."""

from __future__ import annotations

import shutil
from pathlib import Path

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
    config.addinivalue_line("markers", "qemu: needs qemu-aarch64 and aarch64's C library "
                                       "(Debian packages qemu-user, libc6-arm64-cross)")


def _qemu_available() -> bool:
    return shutil.which("qemu-aarch64") is not None and Path("/usr/aarch64-linux-gnu/lib").is_dir()


def pytest_collection_modifyitems(items):
    skips = {}
    if not cuda_available():
        skips["gpu"] = pytest.mark.skip(reason="needs an NVIDIA GPU and libcuda.so.1; none on "
                                               "this machine")
    if not _qemu_available():
        skips["qemu"] = pytest.mark.skip(reason="needs qemu-aarch64 and /usr/aarch64-linux-gnu "
                                                "(apt-get install qemu-user libc6-arm64-cross)")
    for item in items:
        for marker, skip in skips.items():
            if marker in item.keywords:
                item.add_marker(skip)
