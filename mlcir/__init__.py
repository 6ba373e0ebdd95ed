"""mlcir: a machine-learning compiler on upstream MLIR.

Models come in from ONNX (``mlcir.frontend``) or are written in the ``graph`` dialect, are
lowered to loop-level kernels, scheduled (``mlcir.Schedule``), tuned (``mlcir.tune``) and
compiled to LLVM by upstream MLIR passes; :func:`build` returns an executable that takes and
returns numpy arrays.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .errors import (BuildError, LoweringError, MlcirError, ParseError, PassError,
                     RuntimeInputError, VerificationError)
from .ir import make_context, parse
from .driver import build
from .runtime import Executable, register_func, time_evaluator
from .schedule import Schedule, ScheduleError, Trace
from . import tune  # noqa: E402  (mlcir.tune.tune_kernel, …; xgboost is imported lazily)

__all__ = [
    "BuildError", "Executable", "LoweringError", "MlcirError", "ParseError", "PassError",
    "RuntimeInputError", "Schedule", "ScheduleError", "Trace", "VerificationError", "build",
    "make_context", "parse", "register_func", "time_evaluator",
]
