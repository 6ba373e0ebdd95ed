"""Compiling for CUDA: the ``mlcir-cuda`` pipeline, its binary format, and the kernels it
produces (PTX or cubin), all without a GPU or the driver.

- **Binary format**: ``bin`` (cubin, compiled by ``ptxas``) when a CUDA toolkit is found,
  else ``isa`` (PTX text, compiled by the driver when the module loads). ``cuda -format=isa``
  (or ``bin``/``fatbin``) overrides the choice; :func:`binary_format` says what was chosen
  and why.
- :func:`compile_cuda` lowers a module to LLVM host code plus a ``gpu.binary`` per kernel;
  :func:`kernel_binaries` reads the kernels back, e.g. to check the PTX, and
  :func:`cuda_metadata` describes them for a saved model.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from mlir import ir

from mlcir.errors import BuildError
from mlcir.passes import run_pipeline
from mlcir.passes.pipelines_cuda import FORMATS
from mlcir.target import Target

from .driver import CUDA_RUNTIME, DRIVER_LIBRARY

# Where a CUDA toolkit is looked for, in order (its bin/ holds ptxas and fatbinary).
TOOLKIT_ENV = ("MLCIR_CUDA_TOOLKIT", "CUDA_HOME", "CUDA_PATH", "CUDA_ROOT")
DEFAULT_TOOLKITS = ("/usr/local/cuda",)
BINARY_SUFFIX = "_binary"  # the global holding a gpu.binary's object (upstream's naming)


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


def binary_format(target: Target, environ: dict[str, str] | None = None,
                  defaults: Sequence[str] = DEFAULT_TOOLKITS) -> BinaryFormat:
    """The format for ``target``: its ``-format=`` option, else cubin when ``ptxas`` is found."""
    requested = dict(target.options).get("format")
    toolkit = find_toolkit(environ, defaults)
    if requested is None:
        if toolkit:
            return BinaryFormat("bin", toolkit, f"cubin: ptxas found in {toolkit}/bin")
        return BinaryFormat("isa", "", "PTX: no CUDA toolkit with ptxas found (looked at "
                            + ", ".join(f"${k}" for k in TOOLKIT_ENV) + ", "
                            + ", ".join(defaults) + " and PATH); the driver compiles it")
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


def pipeline_for(target: Target, environ: dict[str, str] | None = None, *,
                 graph: bool = True) -> str:
    """The ``mlcir-cuda{...}`` pipeline text for ``target`` (format chosen as above);
    ``graph=False``: from loop-level kernels (a build plan's codegen)."""
    fmt = binary_format(target, environ)
    text = f"chip={target.arch} format={fmt.format}" + ("" if graph else " graph=0")
    if fmt.toolkit:
        text += f" toolkit={fmt.toolkit}"
    if target.threads:
        text += f" threads={target.threads}"
    if target.opt_level != 3:
        text += f" opt-level={target.opt_level}"
    return f"mlcir-cuda{{{text}}}"


# -- compiling -------------------------------------------------------------------------------
def refuse_libraries(libs: dict[str, Any]) -> None:
    if libs:
        names = ", ".join(sorted({name for name, _ in libs.values()}))
        raise BuildError(f"the module calls library functions ({names}), which run on the "
                         "host in Python; the cuda target cannot call them from GPU code")


def compile_cuda(module: ir.Module, target: Target,
                 pipeline: str | None = None) -> BinaryFormat:
    """Lower ``module`` in place to LLVM host code and ``gpu.binary`` kernels (no GPU needed);
    returns the binary format used."""
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


def cuda_metadata(lowered: ir.Module, target: Target) -> dict[str, Any]:
    """The ``cuda`` section of a saved model's ``metadata.json``: the chip, the binary format,
    each kernel module (name, format, size, SHA-256 of its binary, the library symbol holding
    it) and the libraries running it needs."""
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
