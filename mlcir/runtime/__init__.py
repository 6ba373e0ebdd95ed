"""Running compiled modules: numpy in, numpy out, through the MLIR ExecutionEngine."""

from __future__ import annotations

from .evaluator import TimingResult, time_calls, time_evaluator
from .executable import Executable, Function
from .library import get_func, register_func, registered_names
from .memref import aligned_array, aligned_empty
from .signature import Signature, TensorArg

__all__ = ["Executable", "aligned_array", "aligned_empty", "Function", "Signature", "TensorArg", "TimingResult", "get_func",
           "register_func", "registered_names", "time_calls", "time_evaluator"]
