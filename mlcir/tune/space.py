"""Design spaces: a stochastic schedule function per kernel (``space(sch)``).

A user's function is one; :func:`default_space` gives the target's own, built by its backend
from the rules shared by every target (mlcir/targets/space_rules.py): the CPU's in
mlcir/targets/cpu/space.py, the GPU's in mlcir/targets/cuda/space.py.
"""

from __future__ import annotations

from mlcir.target import Target
from mlcir.targets import SpaceFn, backend_for


def default_space(target: Target | str = "llvm") -> SpaceFn:
    """The default design space of ``target``."""
    target = Target.parse(target)
    return backend_for(target).design_space(target)


__all__ = ["SpaceFn", "default_space"]
