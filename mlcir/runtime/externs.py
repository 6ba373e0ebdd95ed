"""External C functions a model calls (UMA backends, docs/uma.md): read, adapted, compiled.

A partitioned graph module calls each offloaded match through a private declaration marked
``graph.extern`` (the C function, its backend, the integers passed after the buffers) and says
on the module (``graph.extern_code``) which C/C++ sources, include folders, flags and shared
libraries define each backend's functions. Lowering gives the declarations a C interface
(``_mlir_ciface_<symbol>(memref descriptors...)``, as for Python library functions); this
module writes the adapter that unpacks the descriptors and calls the backend's function in its
documented convention, ``function(inputs..., outputs..., ints...)``, and compiles it with the
backend's sources: into a library of its own for the JIT (:func:`build_host_library`), into
the model's library when it is saved or cross-compiled (:meth:`Externs.write_sources`).
"""

from __future__ import annotations

import ctypes
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from mlir import ir
from mlir.dialects import func

from mlcir.dialects.dtypes import numpy_dtype
from mlcir.dialects.graph import EXTERN_ATTR, EXTERN_CODE_ATTR
from mlcir.errors import BuildError

# numpy dtype name -> the C type of a pointer to its elements.
C_TYPES = {"float32": "float", "float64": "double", "float16": "uint16_t", "int8": "int8_t",
           "int16": "int16_t", "int32": "int32_t", "int64": "int64_t", "uint8": "uint8_t",
           "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t", "bool": "uint8_t"}
INT_TYPES = ("int", "long", "long long", "int32_t", "int64_t", "size_t")
RETURNS = ("void", "int")
_CXX = (".cc", ".cpp", ".cxx", ".C")


@dataclass(frozen=True)
class ExternCall:
    """One declaration: ``symbol`` calls ``function`` of ``backend`` on buffers of ``args``
    ((rank, numpy dtype name): inputs, then outputs) followed by ``ints``."""

    symbol: str
    function: str
    backend: str
    args: tuple[tuple[int, str], ...]
    ints: tuple[int, ...]
    int_type: str = "int"
    returns: str = "void"
    flops: float = 0.0  # operations of one call, when the backend says (0: unknown)


@dataclass(frozen=True)
class ExternCode:
    """What defines a backend's functions: sources compiled with the target's toolchain,
    include folders, compiler flags, shared libraries linked (by path)."""

    backend: str
    sources: tuple[str, ...] = ()
    include_dirs: tuple[str, ...] = ()
    cflags: tuple[str, ...] = ()
    libraries: tuple[str, ...] = ()


@dataclass(frozen=True)
class Externs:
    """Every external call of a module and the code of the backends they belong to."""

    calls: tuple[ExternCall, ...] = ()
    code: tuple[ExternCode, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.calls)

    def adapter_source(self) -> str:
        """C source of one ``_mlir_ciface_<symbol>`` per call (see the module docstring)."""
        return adapter_source(self.calls)

    def write_sources(self, folder: Path) -> list[str]:
        """The adapter written into ``folder`` and the backends' sources: what a link of the
        model compiles besides its own code."""
        adapter = Path(folder) / "uma_adapters.c"
        adapter.write_text(self.adapter_source())
        sources = [str(adapter)]
        for code in self.code:
            for source in code.sources:
                if not Path(source).is_file():
                    raise BuildError(f"UMA backend '{code.backend}': source file {source} "
                                     "does not exist")
                sources.append(source)
        return sources

    def compile_flags(self) -> list[str]:
        flags = []
        for code in self.code:
            flags += [f"-I{d}" for d in code.include_dirs] + list(code.cflags)
        return flags

    def link_flags(self) -> list[str]:
        """Shared libraries by path (found again through their folder's run path), and the
        C++ runtime when a backend ships C++."""
        flags = []
        for code in self.code:
            for lib in code.libraries:
                if not Path(lib).is_file():
                    raise BuildError(f"UMA backend '{code.backend}': library {lib} does not "
                                     "exist")
                flags += [lib, f"-Wl,-rpath,{Path(lib).resolve().parent}"]
        if any(s.endswith(_CXX) for code in self.code for s in code.sources):
            flags.append("-lstdc++")
        return flags

    def undefined_error(self, linker_output: str) -> BuildError | None:
        """The error naming each function (and its backend) that the link found undefined."""
        missing = []
        for call in self.calls:
            pattern = rf"(undefined (reference to|symbol:?)\s*[`'\"]?){re.escape(call.function)}\b"
            if re.search(pattern, linker_output) and (call.backend, call.function) not in missing:
                missing.append((call.backend, call.function))
        if not missing:
            return None
        parts = []
        for backend, function in missing:
            code = next((c for c in self.code if c.backend == backend), ExternCode(backend))
            where = ", ".join(list(code.sources) + list(code.libraries)) or "nothing"
            parts.append(f"UMA backend '{backend}': function '{function}' is not defined by "
                         f"its sources or libraries ({where})")
        return BuildError("; ".join(parts))


def _c_type(dtype: str) -> str:
    if dtype not in C_TYPES:
        raise BuildError(f"UMA: no C type for buffers of {dtype}")
    return C_TYPES[dtype]


_PRELUDE = """/* Generated by mlcir: MLIR memref descriptors to the UMA calling convention
   function(inputs..., outputs..., ints...) (docs/uma.md). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
typedef struct { void *allocated; char *aligned; int64_t offset; int64_t sizes_strides[]; }
    mlcir_uma_memref;
static void mlcir_uma_check(const mlcir_uma_memref *m, int rank, const char *fn, int arg) {
  int64_t expected = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (m->sizes_strides[d] != 1 && m->sizes_strides[rank + d] != expected) {
      fprintf(stderr, "mlcir: UMA function %s: buffer %d is not contiguous\\n", fn, arg);
      abort();
    }
    expected *= m->sizes_strides[d];
  }
}
"""


def adapter_source(calls: Sequence[ExternCall]) -> str:
    lines = [_PRELUDE]
    declared: set[str] = set()
    for call in calls:
        if call.int_type not in INT_TYPES:
            raise BuildError(f"UMA function '{call.function}': int_type must be one of "
                             f"{', '.join(INT_TYPES)}, got {call.int_type!r}")
        if call.returns not in RETURNS:
            raise BuildError(f"UMA function '{call.function}': returns must be 'void' or "
                             f"'int', got {call.returns!r}")
        pointers = [f"{_c_type(dt)} *" for _, dt in call.args]
        if call.function not in declared:
            params = ", ".join(pointers + [call.int_type] * len(call.ints)) or "void"
            lines.append(f"extern {call.returns} {call.function}({params});")
            declared.add(call.function)
        descs = ", ".join(f"mlcir_uma_memref *a{i}" for i in range(len(call.args))) or "void"
        lines.append(f"void _mlir_ciface_{call.symbol}({descs}) {{")
        for i, (rank, _) in enumerate(call.args):
            lines.append(f'  mlcir_uma_check(a{i}, {rank}, "{call.function}", {i});')
        actuals = [f"({p})a{i}->aligned + a{i}->offset" for i, p in enumerate(pointers)]
        actuals += [f"({call.int_type}){v}" for v in call.ints]
        invocation = f"{call.function}({', '.join(actuals)})"
        if call.returns == "int":
            lines += [f"  int status = {invocation};",
                      "  if (status != 0) {",
                      f'    fprintf(stderr, "mlcir: UMA function {call.function} (backend '
                      f'{call.backend}) returned %d\\n", status);',
                      "    abort();", "  }"]
        else:
            lines.append(f"  {invocation};")
        lines.append("}")
    return "\n".join(lines) + "\n"


def read_externs(module: ir.Module) -> Externs:
    """The external calls declared in ``module`` (before lowering) and their backends' code."""
    calls = []
    for op in module.body.operations:
        if isinstance(op, func.FuncOp) and EXTERN_ATTR in op.attributes:
            d = ir.DictAttr(op.attributes[EXTERN_ATTR])
            fn_type = ir.FunctionType(op.attributes["function_type"].value)
            types = list(fn_type.inputs)
            if fn_type.results and len(types) < len(fn_type.results):
                types += list(fn_type.results)
            args = tuple((ir.ShapedType(t).rank, numpy_dtype(ir.ShapedType(t).element_type).name)
                         for t in types)
            calls.append(ExternCall(
                op.sym_name.value, ir.StringAttr(d["function"]).value,
                ir.StringAttr(d["backend"]).value, args,
                tuple(int(v) for v in ir.DenseI64ArrayAttr(d["ints"])),
                ir.StringAttr(d["int_type"]).value, ir.StringAttr(d["returns"]).value,
                ir.FloatAttr(d["flops"]).value if "flops" in d else 0.0))
    code = []
    if EXTERN_CODE_ATTR in module.operation.attributes:
        backends = ir.DictAttr(module.operation.attributes[EXTERN_CODE_ATTR])
        used = {c.backend for c in calls}
        for i in range(len(backends)):
            named = backends[i]
            if named.name not in used:
                continue
            d = ir.DictAttr(named.attr)
            code.append(ExternCode(named.name, *(
                tuple(ir.StringAttr(a).value for a in ir.ArrayAttr(d[key]))
                for key in ("sources", "include_dirs", "cflags", "libraries"))))
    return Externs(tuple(calls), tuple(code))


def code_attribute(code: ExternCode) -> ir.Attribute:
    """``code`` as the entry of its backend in the module's ``graph.extern_code``."""
    def strings(values: Sequence[str]) -> ir.Attribute:
        return ir.ArrayAttr.get([ir.StringAttr.get(str(v)) for v in values])

    return ir.DictAttr.get({"sources": strings(code.sources),
                            "include_dirs": strings(code.include_dirs),
                            "cflags": strings(code.cflags),
                            "libraries": strings(code.libraries)})


def set_code(module: ir.Module, code: ExternCode) -> None:
    """Record ``code`` on ``module`` (``graph.extern_code``), replacing its backend's entry."""
    attrs = module.operation.attributes
    entries = {}
    if EXTERN_CODE_ATTR in attrs:
        old = ir.DictAttr(attrs[EXTERN_CODE_ATTR])
        entries = {old[i].name: old[i].attr for i in range(len(old))}
    entries[code.backend] = code_attribute(code)
    attrs[EXTERN_CODE_ATTR] = ir.DictAttr.get(entries)


def build_host_library(externs: Externs, folder: Path, compiler: str) -> Path:
    """The adapters and the backends' code compiled by ``compiler`` into a shared library in
    ``folder``, every symbol defined (else the :meth:`Externs.undefined_error`) and bound
    inside it (``-Bsymbolic``: another model's functions of the same name never interpose)."""
    folder = Path(folder)
    out = folder / "uma_externs.so"
    cmd = ([compiler, "-shared", "-fPIC", "-O2", "-Wl,--no-undefined", "-Wl,-Bsymbolic",
            "-o", str(out)]
           + externs.write_sources(folder) + externs.compile_flags() + externs.link_flags()
           + ["-lm"])
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        error = externs.undefined_error(result.stderr)
        if error is not None:
            raise error
        backends = ", ".join(sorted({c.backend for c in externs.calls}))
        raise BuildError(f"UMA backend(s) {backends}: compiling their C code failed: "
                         f"{result.stderr.strip()[:2000]}")
    return out


def load_host_library(externs: Externs, path: Path) -> tuple[ctypes.CDLL, dict[str, int]]:
    """``path`` (:func:`build_host_library`) loaded privately (``RTLD_LOCAL``), and the
    address of each call's adapter by symbol; keep the library alive with the engine."""
    lib = ctypes.CDLL(str(path), mode=getattr(ctypes, "RTLD_LOCAL", 0))
    addresses = {}
    for call in externs.calls:
        fn = getattr(lib, f"_mlir_ciface_{call.symbol}")
        addresses[call.symbol] = ctypes.cast(fn, ctypes.c_void_p).value
    return lib, addresses
