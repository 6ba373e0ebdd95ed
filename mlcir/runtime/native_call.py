"""The fast call path of compiled functions: a small CPython extension (``native_call.c``).

From Python, packing memref descriptors with ctypes costs microseconds per call (reading one
array's data pointer through ``.ctypes.data`` alone costs about as much as a numpy ufunc on a
small array). The extension does the whole call in C: numpy attribute checks, descriptors on
the C stack (so concurrent calls from several threads never share them), uninitialised aligned
results, and the compiled function run with the GIL released. It is compiled with the system C
compiler at first use and cached per Python/numpy/source version; without a compiler or
Python's headers :func:`extension` returns None and :class:`~mlcir.runtime.Function` takes its
ctypes path (the same results, slower calls).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from types import ModuleType

import numpy as np

from .signature import Signature

_SOURCE = Path(__file__).with_name("native_call.c")
_MODULE_NAME = "_mlcir_native_call"


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mlcir" / "native"


def _compiler() -> str | None:
    for name in (os.environ.get("CC", ""), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def _build(path: Path, source: bytes) -> bool:
    cc = _compiler()
    include = sysconfig.get_paths().get("include")
    if cc is None or not include or not os.path.exists(os.path.join(include, "Python.h")):
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mlcir-native-", dir=path.parent) as tmp:
        src = Path(tmp) / "native_call.c"
        src.write_bytes(source)
        so = Path(tmp) / path.name
        cmd = [cc, "-O2", "-shared", "-fPIC", f"-I{include}", f"-I{np.get_include()}",
               str(src), "-o", str(so)]
        if subprocess.run(cmd, capture_output=True).returncode != 0:
            return False
        os.replace(so, path)  # atomic: concurrent processes may build the same file
    return True


@functools.lru_cache(maxsize=1)
def extension() -> ModuleType | None:
    """The compiled extension (built on first use), or None when it cannot be built."""
    if os.environ.get("MLCIR_NO_NATIVE_CALL"):
        return None
    source = _SOURCE.read_bytes()
    key = hashlib.sha256(source + sys.version.encode() + np.__version__.encode()
                         + np.get_include().encode()).hexdigest()[:16]
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    path = cache_dir() / f"{_MODULE_NAME}-{key}{suffix}"
    try:
        if not path.exists() and not _build(path, source):
            return None
        loader = importlib.machinery.ExtensionFileLoader(_MODULE_NAME, str(path))
        spec = importlib.util.spec_from_file_location(_MODULE_NAME, path, loader=loader)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        loader.exec_module(module)
        return module
    except (OSError, ImportError):
        return None


def plan(function_address: int, signature: Signature) -> bytes:
    """The int64 words ``native_call.c`` reads (its header comment). A result with a dynamic
    shape (-1 dims) must be given as an output: its shape is computed in Python first."""
    words = [function_address, len(signature.args), len(signature.results)]
    for arg in signature.args:
        words += [arg.dtype.num, int(arg.kind == "inout"), len(arg.shape)]
        words += [-1 if d is None else d for d in arg.shape]
    for result in signature.results:
        words += [result.dtype.num, result.dtype.itemsize, len(result.shape)]
        words += [-1 if d is None else d for d in result.shape]
    return np.array(words, np.int64).tobytes()

