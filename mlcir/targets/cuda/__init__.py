"""The ``cuda`` target: gpu/nvvm kernels compiled to PTX/cubin, launched through the MLIR CUDA
runtime (docs/cuda.md).

One module per job: :mod:`.driver` (is the NVIDIA driver here, which GPU), :mod:`.codegen`
(the pipeline, the binary format, the kernels it produces; no GPU needed), :mod:`.library`
(models as shared libraries, built without a driver and loaded with one), :mod:`.elf`
(reading a library without loading it), :mod:`.timing` (timing the kernels alone),
:mod:`.space` (the GPU design space), :mod:`.backend` (:class:`CudaBackend`, what
:func:`mlcir.targets.backend_for` returns for ``cuda``). ``python -m mlcir.targets.cuda`` prints
the PTX of a kernel file or the kernels of a saved model.
"""

from __future__ import annotations

from .backend import CudaBackend
from .codegen import (BinaryFormat, binary_format, compile_cuda, cuda_metadata, find_toolkit,
                      kernel_binaries, pipeline_for, ptx_of)
from .driver import (CUDA_RUNTIME, DRIVER_LIBRARY, DriverProblem, chip_capability,
                     cuda_runtime_library, device_capability, device_problem, driver_problem,
                     require_driver)
from .elf import embedded_kernels, needed_libraries
from .library import CudaSharedObject, compile_cuda_shared_object, cuda_library
from .space import gpu_space
from .timing import DeviceArrays, time_device

__all__ = ["BinaryFormat", "CUDA_RUNTIME", "CudaBackend", "CudaSharedObject", "DRIVER_LIBRARY",
           "DeviceArrays", "DriverProblem", "binary_format", "chip_capability", "compile_cuda",
           "compile_cuda_shared_object", "cuda_library", "cuda_metadata", "cuda_runtime_library",
           "device_capability", "device_problem", "driver_problem", "embedded_kernels",
           "find_toolkit", "gpu_space", "kernel_binaries", "needed_libraries", "pipeline_for",
           "ptx_of", "require_driver", "time_device"]
