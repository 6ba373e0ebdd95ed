"""Exception types of mlcir.

Every error a user can trigger derives from :class:`MlcirError`, so scripts can catch one type;
the subclasses say which layer refused the input, and each message names the thing at fault
(the op and its location, the pass, the schedule instruction, the file and line).
"""

from __future__ import annotations


class MlcirError(Exception):
    """Base class of every error mlcir raises on bad input."""


class VerificationError(MlcirError):
    """IR that does not verify. ``diagnostics`` holds ``(location, message)`` pairs."""

    def __init__(self, message: str, diagnostics: list[tuple[str, str]] | None = None):
        super().__init__(message)
        self.diagnostics = diagnostics or []


class ParseError(MlcirError):
    """Text that is not valid MLIR (or names an unknown op)."""

    def __init__(self, message: str, diagnostics: list[tuple[str, str]] | None = None):
        super().__init__(message)
        self.diagnostics = diagnostics or []


class TargetError(MlcirError, ValueError):
    """A target string that mlcir does not understand: an unknown kind, an unknown option or a
    value out of range; the message names it and lists what is known."""


class PassError(MlcirError):
    """A pass or pipeline that is unknown, badly spelled, or failed while running."""


class LoweringError(MlcirError):
    """An op that a lowering cannot handle (unsupported shape, dtype or attribute)."""


class RuntimeInputError(MlcirError, ValueError):
    """Arguments given to a compiled function that do not match its signature."""


class DimMismatchError(RuntimeInputError):
    """Inputs that give one symbolic dim (a batch ``N``) different sizes."""


class RegistrationError(MlcirError, TypeError):
    """A library function registered with something that is not a function or a name."""


class BuildError(MlcirError):
    """A module that could not be compiled for the requested target."""


class FrontendError(MlcirError):
    """A model the ONNX frontend cannot import: an unreadable or invalid file, an unsupported
    opset or input type, or unsupported nodes (all of them listed in one message, each with its
    name, op type and opset; also in ``problems`` as ``(node, message)`` pairs)."""

    def __init__(self, message: str, problems: list[tuple[str, str]] | None = None):
        super().__init__(message)
        self.problems = problems or []


class TuningError(MlcirError, ValueError):
    """A tuning request that cannot run: a trial count, round size or builder count out of
    range, an unknown role name (search strategy, cost model, ...), or a ``work_dir`` that
    cannot be written; the message names the parameter, the value and what is allowed."""


class LoadError(MlcirError):
    """A saved model that cannot be loaded: not an mlcir model, corrupt or truncated, saved by
    another version, or calling library functions that are not registered."""


class CudaDriverError(BuildError):
    """The CUDA target was asked to run code where the NVIDIA driver (``libcuda.so.1``) or a GPU
    is missing. PTX/cubin can still be built without one."""


class LaunchConfigError(BuildError):
    """A GPU kernel whose launch configuration exceeds a device limit (threads per block, block
    or grid dims, shared memory, registers); the message names the kernel and the limit."""
