"""UMA: bring your own accelerator or library (docs/uma.md).

A backend (:class:`UMABackend`) offloads the matches of its patterns to external C functions
compiled into the model; :func:`get_backend` finds one by name (``blas`` is built in).
"""

from . import blas  # noqa: F401 - registers the built-in "blas" backend
from .backend import Decision, OffloadPattern, PartitionReport, UMABackend, shape
from .registry import backend_names, get_backend, register_backend

__all__ = ["Decision", "OffloadPattern", "PartitionReport", "UMABackend", "backend_names",
           "get_backend", "register_backend", "shape"]
