"""Which config a template gets when it runs: TVM's dispatch contexts.

A call of a template function asks the innermost context for the config of its workload
``(template name, args)``: :class:`ApplyConfig` (one fixed config; the measurer uses it),
:class:`ApplyHistoryBest` (the fastest recorded config, :mod:`.record`), or, outside any
context, :class:`FallbackContext` (each knob's first choice, with one warning per workload).
:func:`get_config` inside the template returns that config.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from mlcir.errors import MlcirError

from .space import ConfigSpace, FallbackConfigEntity

logger = logging.getLogger("autotvm")

Workload = tuple[str, tuple[Any, ...]]


class DispatchContext:
    """A context that answers a workload's config; contexts nest (``with`` blocks)."""

    _local = threading.local()

    @classmethod
    def current(cls) -> "DispatchContext":
        stack = getattr(cls._local, "stack", None)
        return stack[-1] if stack else _FALLBACK

    def query(self, target: Any, workload: Workload) -> ConfigSpace:
        """The config of ``workload`` (``target`` is the target string or None)."""
        raise NotImplementedError

    def __enter__(self) -> "DispatchContext":
        stack = getattr(DispatchContext._local, "stack", None)
        if stack is None:
            stack = DispatchContext._local.stack = []
        stack.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        DispatchContext._local.stack.pop()


class ApplyConfig(DispatchContext):
    """Every template call gets ``config`` (a config space in collect mode while a task is
    created, a config entity while one is measured)."""

    def __init__(self, config: ConfigSpace):
        self.config = config

    def query(self, target: Any, workload: Workload) -> ConfigSpace:  # noqa: ARG002
        return self.config


class FallbackContext(DispatchContext):
    """Each knob's first choice, with a warning the first time a workload falls back."""

    def __init__(self) -> None:
        self.warned: set[str] = set()

    def query(self, target: Any, workload: Workload) -> ConfigSpace:
        key = repr(workload)
        if key not in self.warned:
            self.warned.add(key)
            logger.warning("Cannot find config for target=%s, workload=%s. A fallback "
                           "configuration is used (each knob's first choice), which may bring "
                           "great performance regression.", target, workload)
        return FallbackConfigEntity()


_FALLBACK = FallbackContext()

# The config of the template running now (set by the template wrapper, read by get_config).
_running = threading.local()


def push_config(config: ConfigSpace) -> None:
    stack = getattr(_running, "stack", None)
    if stack is None:
        stack = _running.stack = []
    stack.append(config)


def pop_config() -> None:
    _running.stack.pop()


def get_config() -> ConfigSpace:
    """The config of the template that is running (call it inside an ``@autotvm.template``)."""
    stack = getattr(_running, "stack", None)
    if not stack:
        raise MlcirError("autotvm.get_config() is called outside an @autotvm.template function "
                         "(call the template, or instantiate it through a task)")
    return stack[-1]
