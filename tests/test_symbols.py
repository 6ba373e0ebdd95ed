"""Kernel and helper symbols never collide with the C library's.

Kernels are named after their ops (``exp``, ``tanh``, ``erf``); when those names reached the
object code, LLVM's call to the C library's double ``exp`` resolved to the kernel itself (a
segfault) and ``convert-math-to-libm`` declared ``erf`` over the kernel. Every private function
is now ``mlcir.<name>`` in the object code (``passes/private_symbols.py``); these tests list the
symbols a compiled model defines and compare them with what libc and libm export.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from mlir import ir
from mlir.dialects import func

import mlcir
from mlcir.dialects import graph
from mlcir.paths import llvm_tool
from mlcir.runtime.model_file import read_library

# Unary float ops without attributes (of a float result: not the integer, boolean and
# float-test ones); each gets a kernel named after it.
UNARY = sorted(name for name, op in graph.OPS.items()
               if op.pattern == "elementwise" and op.operands == ("x",) and not op.attrs
               and name not in ("bitwise_not", "logical_not", "isnan"))
REDUCTIONS = ("sum", "max", "min", "mean")


def _defined_dynamic_symbols(library: Path) -> set[str]:
    out = subprocess.run([llvm_tool("llvm-nm"), "-D", "--defined-only", "--format=just-symbols",
                          str(library)], check=True, capture_output=True, text=True).stdout
    return {line.split("@")[0] for line in out.split()}


def _loaded_library(soname: str) -> Path:
    """The path of ``soname`` as this process loaded it (from /proc/self/maps)."""
    for line in Path("/proc/self/maps").read_text().splitlines():
        path = line.split()[-1]
        if Path(path).name == soname:
            return Path(path)
    pytest.skip(f"{soname} is not loaded in this process (not a glibc system?)")


def _model(dtype: str) -> ir.Module:
    """``main(x)`` returning every unary op and reduction of x, each its own kernel."""
    ctx = mlcir.make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        t = ir.RankedTensorType.get([4, 8], ir.Type.parse(dtype))
        with ir.InsertionPoint(module.body):
            results = []

            def body(x):
                for name in UNARY:
                    results.append(graph.build(name, [x]))
                for name in REDUCTIONS:
                    results.append(graph.build(name, [x], {"axes": [1], "keepdims": 0}))
                return results

            fn = func.FuncOp("main", ir.FunctionType.get([t], []))
            with ir.InsertionPoint(fn.add_entry_block()):
                outs = body(fn.arguments[0])
                func.ReturnOp(outs)
            fn.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get([t], [v.type for v in outs]))
    return module


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """The f64 model, compiled and saved; its shared library extracted."""
    folder = tmp_path_factory.mktemp("symbols")
    ex = mlcir.build(_model("f64"))
    ex.save(folder / "model.mlcir")
    _, data = read_library(folder / "model.mlcir")
    library = folder / "model.so"
    library.write_bytes(data)
    return ex, library


def test_no_defined_symbol_is_a_libc_or_libm_symbol(compiled):
    _, library = compiled
    ours = _defined_dynamic_symbols(library)
    assert any(s.startswith("mlcir.") for s in ours), sorted(ours)  # the kernels are there
    for soname, known in (("libc.so.6", "malloc"), ("libm.so.6", "exp")):
        theirs = _defined_dynamic_symbols(_loaded_library(soname))
        assert known in theirs  # the listing works
        assert not ours & theirs, f"{library.name} defines {soname} symbols {sorted(ours & theirs)}"


@pytest.mark.parametrize("dtype", ["f64", "f32"])
def test_transcendental_kernels_run_in_both_precisions(dtype, compiled):
    np_dtype = np.float64 if dtype == "f64" else np.float32
    ex = compiled[0] if dtype == "f64" else mlcir.build(_model(dtype))
    x = np.random.default_rng(0).uniform(0.1, 2.0, (4, 8)).astype(np_dtype)
    got = ex.main(x)
    names = UNARY + list(REDUCTIONS)
    assert len(got) == len(names)
    for name, value in zip(names, got):
        attrs = {"axes": [1], "keepdims": 0} if name in REDUCTIONS else {}
        want = graph.OPS[name].evaluate(x, **attrs)
        assert value.dtype == np_dtype, name
        rtol = 1e-12 if dtype == "f64" else 2e-6
        np.testing.assert_allclose(value, want, rtol=rtol, atol=rtol, err_msg=name)


@pytest.mark.usefixtures("ctx")
def test_private_functions_are_renamed_before_llvm():
    from mlcir.passes import run_pipeline

    module = mlcir.parse("""
      func.func private @exp(%x: f64) -> f64 { %y = math.exp %x : f64
                                                return %y : f64 }
      func.func @main(%x: f64) -> f64 { %y = func.call @exp(%x) : (f64) -> f64
                                        return %y : f64 }""")
    run_pipeline(module, "mlcir-private-symbols")
    text = str(module)
    assert "func.func private @mlcir.exp" in text and "call @mlcir.exp" in text
