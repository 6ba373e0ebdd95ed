"""``mlcir.te``: TVM's tensor expressions, to write new operators in Python.

``placeholder``, ``compute``, ``reduce_axis``, ``sum``/``max``/``min``, ``if_then_else`` and
elementwise math describe an operator; ``create_prim_func([A, B, C])`` makes it a loop-level
kernel whose blocks are named after the computes, which ``mlcir.Schedule``, ``mlcir.tune`` and
``mlcir.build`` take like any other (docs/te.md).
"""

from __future__ import annotations

from .expr import Expr, IterVar, TEError, const
from .lower import create_prim_func
from .tensor import (Tensor, abs, all, any, ceil, compute, cos, erf, exp, exp2, floor,
                     if_then_else, log, log2, max, maximum, min, minimum, placeholder, power,
                     reduce_axis, round, rsqrt, sigmoid, sin, sqrt, sum, tanh)

__all__ = ["Expr", "IterVar", "TEError", "Tensor", "abs", "all", "any", "ceil", "compute",
           "const", "cos", "create_prim_func", "erf", "exp", "exp2", "floor", "if_then_else",
           "log", "log2", "max", "maximum", "min", "minimum", "placeholder", "power",
           "reduce_axis", "round", "rsqrt", "sigmoid", "sin", "sqrt", "sum", "tanh"]
