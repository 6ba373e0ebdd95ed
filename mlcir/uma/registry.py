"""UMA backends by name: registered ones, and ``module:Class`` / ``file.py:Class`` specs.

``mlcir compile --backend NAME`` runs in a process that has not imported the backend's module:
a spec naming a module or a Python file and the backend class imports it, instantiates the
class and registers it.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import Any

from mlcir.errors import BuildError

# Backends by name (mlcir.uma.UMABackend objects; this module sits below .backend).
_BACKENDS: dict[str, Any] = {}


def register_backend(backend: Any, *, override: bool = False) -> None:
    name = backend.target_name
    if name in _BACKENDS and _BACKENDS[name] is not backend and not override:
        raise ValueError(f"UMA backend '{name}' is already registered (pass override=True "
                         "to replace it)")
    _BACKENDS[name] = backend


def backend_names() -> list[str]:
    return sorted(_BACKENDS)


def _is_backend(value: object) -> bool:
    """A backend object (duck-typed: this module sits below :mod:`.backend`)."""
    return hasattr(value, "partition") and hasattr(value, "target_name")


def get_backend(spec: Any) -> Any:
    """The backend ``spec`` names: a backend object, a registered name, or ``module:Class`` /
    ``path/to/file.py:Class`` (imported, instantiated and registered). The built-in ones
    register when :mod:`mlcir.uma` is imported."""
    if _is_backend(spec):
        return spec  # type: ignore[return-value]
    if ":" in spec:
        return _from_spec(spec)
    if spec not in _BACKENDS:
        known = ", ".join(sorted(_BACKENDS)) or "none"
        raise BuildError(f"no UMA backend named '{spec}' (registered: {known}; or name its "
                         "class: module:Class or file.py:Class)")
    return _BACKENDS[spec]


def _from_spec(spec: str) -> Any:
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
    if not (isinstance(cls, type) and _is_backend(cls)):
        raise BuildError(f"UMA backend '{spec}': {where} has no UMABackend subclass "
                         f"'{cls_name}'")
    backend = cls()
    register_backend(backend, override=True)
    return backend
