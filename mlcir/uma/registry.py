"""UMA backends by name: registered ones, and ``module:Class`` / ``file.py:Class`` specs.

``mlcir compile --backend NAME`` runs in a process that has not imported the backend's module:
a spec naming a module or a Python file and the backend class imports it, instantiates the
class and registers it.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

from mlcir.errors import BuildError

if TYPE_CHECKING:
    from .backend import UMABackend

_BACKENDS: dict[str, "UMABackend"] = {}


def register_backend(backend: "UMABackend", *, override: bool = False) -> None:
    name = backend.target_name
    if name in _BACKENDS and _BACKENDS[name] is not backend and not override:
        raise ValueError(f"UMA backend '{name}' is already registered (pass override=True "
                         "to replace it)")
    _BACKENDS[name] = backend


def backend_names() -> list[str]:
    _builtin()
    return sorted(_BACKENDS)


def _builtin() -> None:
    from . import blas  # noqa: F401 - registers "blas"


def get_backend(spec: "str | UMABackend") -> "UMABackend":
    """The backend ``spec`` names: a backend object, a registered name, or ``module:Class`` /
    ``path/to/file.py:Class`` (imported, instantiated and registered)."""
    from .backend import UMABackend

    if isinstance(spec, UMABackend):
        return spec
    if ":" in spec:
        return _from_spec(spec)
    _builtin()
    if spec not in _BACKENDS:
        known = ", ".join(sorted(_BACKENDS)) or "none"
        raise BuildError(f"no UMA backend named '{spec}' (registered: {known}; or name its "
                         "class: module:Class or file.py:Class)")
    return _BACKENDS[spec]


def _from_spec(spec: str) -> "UMABackend":
    from .backend import UMABackend

    where, _, cls_name = spec.rpartition(":")
    try:
        if where.endswith(".py"):
            path = Path(where)
            if not path.is_file():
                raise BuildError(f"UMA backend '{spec}': {where} does not exist")
            module_spec = importlib.util.spec_from_file_location(f"mlcir_uma_{path.stem}", path)
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)  # type: ignore[union-attr]
        else:
            module = importlib.import_module(where)
    except ImportError as error:
        raise BuildError(f"UMA backend '{spec}': cannot import {where}: {error}") from None
    cls = getattr(module, cls_name, None)
    if not (isinstance(cls, type) and issubclass(cls, UMABackend)):
        raise BuildError(f"UMA backend '{spec}': {where} has no UMABackend subclass "
                         f"'{cls_name}'")
    backend = cls()
    register_backend(backend, override=True)
    return backend
