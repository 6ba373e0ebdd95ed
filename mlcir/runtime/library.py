"""Library functions: Python (numpy) implementations that compiled code calls by name.

``@register_func("env.linear")`` registers a destination-passing function — its arguments are
the inputs followed by the outputs, all numpy arrays, and it writes the outputs in place (the
course's ``env.linear``/``env.relu``). A graph module calls it through a declaration marked
``graph.library``; at build time each such declaration is bound to a ctypes callback that
views the memrefs as numpy arrays (no copy) and calls the function.
"""

from __future__ import annotations

import ctypes
import inspect
import threading
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from mlcir.errors import BuildError, RegistrationError

from .memref import descriptor_type, view

_REGISTRY: dict[str, Callable[..., None]] = {}


def register_func(name: str, f: Callable[..., None] | None = None, *, override: bool = False):
    """Register ``f`` under ``name`` (usable as a decorator, as TVM's ``register_func``)."""

    if not isinstance(name, str) or not name:
        raise RegistrationError(f"register_func: the name must be a non-empty string, got "
                                f"{name!r}")

    def register(fn: Callable[..., None]) -> Callable[..., None]:
        if not callable(fn):
            raise RegistrationError(f"register_func('{name}', ...): {fn!r} is not callable (a "
                                    "library function takes its inputs, then its outputs)")
        _check_signature(name, fn)
        if name in _REGISTRY and not override:
            raise ValueError(f"library function '{name}' is already registered "
                             "(pass override=True to replace it)")
        _REGISTRY[name] = fn
        return fn

    return register(f) if f is not None else register


def _signature(fn: Callable[..., None]) -> inspect.Signature | None:
    """``fn``'s signature, or None where Python cannot read one (some builtins)."""
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def _check_signature(name: str, fn: Callable[..., None]) -> None:
    """Refuse at registration a function no call can fit: compiled code passes its arrays
    positionally (at least the output), and nothing by keyword."""
    sig = _signature(fn)
    if sig is None:
        return
    kinds = inspect.Parameter
    positional = [p for p in sig.parameters.values()
                  if p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD,
                                kinds.VAR_POSITIONAL)]
    keyword_only = [p.name for p in sig.parameters.values()
                    if p.kind == kinds.KEYWORD_ONLY and p.default is p.empty]
    if not positional:
        raise RegistrationError(f"register_func('{name}', ...): {fn!r} has the signature {sig}, "
                                "which takes no positional argument (a library function takes "
                                "its inputs, then its outputs, as arrays)")
    if keyword_only:
        raise RegistrationError(f"register_func('{name}', ...): {fn!r} has the signature {sig}, "
                                f"whose keyword-only argument '{keyword_only[0]}' no call passes "
                                "(compiled code passes its arrays positionally)")


def get_func(name: str) -> Callable[..., None] | None:
    return _REGISTRY.get(name)


def registered_names() -> list[str]:
    return sorted(_REGISTRY)


@dataclass
class CallbackErrors:
    """Exceptions raised inside callbacks cannot cross the C frames; they are kept here, by the
    thread that called the compiled function (a callback runs on its caller's thread), and
    re-raised in that thread once the compiled function returns."""

    pending: dict[int, list[BaseException]] = field(default_factory=dict)

    def record(self, error: BaseException) -> None:
        self.pending.setdefault(threading.get_ident(), []).append(error)

    def raise_pending(self) -> None:
        errors = self.pending.pop(threading.get_ident(), None)
        if errors:
            raise errors[0]


def make_callback(name: str, arg_specs: list[tuple[int, np.dtype]],
                  errors: CallbackErrors) -> ctypes._CFuncPtr:
    """A C-callable wrapper of the library function ``name`` for memref arguments of the given
    (rank, dtype); it must be kept alive as long as the engine that calls it."""
    fn = get_func(name)
    if fn is None:
        known = ", ".join(registered_names()) or "none"
        raise BuildError(f"library function '{name}' is called but not registered "
                         f"(mlcir.register_func); registered: {known}")
    sig = _signature(fn)
    if sig is not None:
        try:
            sig.bind(*range(len(arg_specs)))
        except TypeError as error:
            raise BuildError(f"library function '{name}' is called with {len(arg_specs)} "
                             f"arrays (its inputs, then its outputs), but its signature {sig} "
                             f"cannot take them: {error}") from None
    pointer_types = [ctypes.POINTER(descriptor_type(rank, np.dtype(dt).name))
                     for rank, dt in arg_specs]

    def call(*pointers) -> None:
        try:
            arrays = [view(p, dt, rank) for p, (rank, dt) in zip(pointers, arg_specs)]
            fn(*arrays)
        except BaseException as error:  # noqa: BLE001 - re-raised after the native call
            wrapped = RuntimeError(f"library function '{name}' raised "
                                   f"{type(error).__name__}: {error}")
            wrapped.__cause__ = error
            errors.record(wrapped)

    return ctypes.CFUNCTYPE(None, *pointer_types)(call)
