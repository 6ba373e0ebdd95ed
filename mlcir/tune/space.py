"""Design spaces and default schedules: what the tuner searches and where it starts.

A design space is a stochastic schedule function per kernel (``space(sch)``); a user's function
is one; :func:`default_space` gives the target's own, built by its backend from the rules shared
by every target (mlcir/targets/space_rules.py): the CPU's in mlcir/targets/cpu/space.py, the
GPU's in mlcir/targets/cuda/space.py. :func:`default_schedule` is the schedule a kernel gets
without tuning (``mlcir.build`` applies it to every kernel without a record) and the first
candidate of every search: the CPU's in mlcir/targets/cpu/defaults.py.
"""

from __future__ import annotations

from typing import Any

from mlcir.runtime.compile import as_module
from mlcir.schedule import Schedule
from mlcir.target import Target
from mlcir.targets import SpaceFn, backend_for


def default_space(target: Target | str = "llvm") -> SpaceFn:
    """The default design space of ``target``."""
    target = Target.parse(target)
    return backend_for(target).design_space(target)


def default_schedule(kernel: Any, target: Target | str = "llvm") -> Schedule:
    """The default schedule of a loop-level ``kernel`` (a module or its text, function ``main``)
    for ``target``, chosen from the target without measuring: print ``.trace``, apply
    ``.as_transform()`` with ``mlcir-opt --transform-script``, or edit it. An empty trace
    leaves the kernel to the target's pipeline (docs/tuning.md, "Default schedules")."""
    target = Target.parse(target)
    return backend_for(target).default_schedule(as_module(kernel), target)


__all__ = ["SpaceFn", "default_schedule", "default_space"]
