"""mlcir: a machine-learning compiler on upstream MLIR.

Models come in from ONNX (``mlcir.frontend``) or are written in the ``graph`` dialect, are
lowered to loop-level kernels, scheduled (``mlcir.Schedule``), tuned (``mlcir.tune``) and
compiled to LLVM (CPU) or PTX/cubin (CUDA) by upstream MLIR passes; :func:`build` returns an
executable that takes and returns numpy arrays, :meth:`Executable.save` writes it to a file,
:func:`compile` compiles straight to such a file (for CUDA without a GPU), and :func:`load`
reads it back without recompiling.
"""

from __future__ import annotations

from .version import __version__
from .errors import (BuildError, CudaDriverError, FrontendError, LaunchConfigError, LoadError,
                     LoweringError, MlcirError, ParseError, PassError, RuntimeInputError,
                     TargetError, TuningError, VerificationError)
from .ir import make_context, parse
from .driver import build, compile, load  # named as tvm.compile and torch.compile are
from .confirm import confirm_in_model
from .runtime import Executable, register_func, time_evaluator
from .schedule import Schedule, ScheduleError, Trace
from . import tune  # noqa: F401  (mlcir.tune.tune_kernel, …; xgboost is imported lazily)


def __getattr__(name: str):
    # mlcir.frontend (which imports onnx) and mlcir.autotvm load on first use, so `import
    # mlcir` stays fast.
    if name in ("frontend", "autotvm"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'mlcir' has no attribute '{name}'")


__all__ = [
    "BuildError", "CudaDriverError", "Executable", "FrontendError", "LaunchConfigError", "__version__",
    "LoadError", "LoweringError", "MlcirError", "TargetError", "TuningError",
    "ParseError", "PassError", "RuntimeInputError", "Schedule", "ScheduleError", "Trace", "VerificationError",
    "build", "compile", "confirm_in_model", "load", "make_context", "parse", "register_func", "time_evaluator",
]
