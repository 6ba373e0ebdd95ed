"""Loop-level kernels used by tests, examples and benchmarks, with their numpy references.

Each function returns ``(mlir_text, reference)`` where ``reference(*inputs)`` is numpy's
answer. The kernels are written as people write them for mlir-opt: linalg on tensors in a
``func.func @main``; block names follow mlcir's naming rule unless given.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

Kernel = tuple[str, Callable[..., np.ndarray]]


def matmul(m: int = 128, n: int = 128, k: int = 128, name: str = "C") -> Kernel:
    """``C = A @ B`` with a ``C_init`` fill: the course's matmul (block "C")."""
    a, b, c = f"tensor<{m}x{k}xf32>", f"tensor<{k}x{n}xf32>", f"tensor<{m}x{n}xf32>"
    text = f"""
func.func @main(%A: {a}, %B: {b}) -> {c} {{
  %e = tensor.empty() : {c}
  %z = arith.constant 0.0 : f32
  %f = linalg.fill {{loop.block = "{name}_init"}} ins(%z : f32) outs(%e : {c}) -> {c}
  %r = linalg.matmul {{loop.block = "{name}"}} ins(%A, %B : {a}, {b}) outs(%f : {c}) -> {c}
  return %r : {c}
}}"""
    return text, lambda x, y: x @ y


def matmul_bias_relu(m: int = 64, n: int = 128, k: int = 96) -> Kernel:
    """``relu(A @ B + bias)`` as three blocks: ``C`` (matmul), ``D`` (bias add), ``E`` (relu)."""
    a, b, c = f"tensor<{m}x{k}xf32>", f"tensor<{k}x{n}xf32>", f"tensor<{m}x{n}xf32>"
    text = f"""
func.func @main(%A: {a}, %B: {b}, %bias: tensor<{n}xf32>) -> {c} {{
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : {c}
  %f = linalg.fill {{loop.block = "C_init"}} ins(%z : f32) outs(%e : {c}) -> {c}
  %r = linalg.matmul {{loop.block = "C"}} ins(%A, %B : {a}, {b}) outs(%f : {c}) -> {c}
  %e2 = tensor.empty() : {c}
  %d = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                                          affine_map<(i, j) -> (i, j)>],
                        iterator_types = ["parallel", "parallel"], loop.block = "D"}}
       ins(%r, %bias : {c}, tensor<{n}xf32>) outs(%e2 : {c}) {{
    ^bb0(%x: f32, %y: f32, %o: f32):
      %s = arith.addf %x, %y : f32
      linalg.yield %s : f32
  }} -> {c}
  %e3 = tensor.empty() : {c}
  %g = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                        iterator_types = ["parallel", "parallel"], loop.block = "E"}}
       ins(%d : {c}) outs(%e3 : {c}) {{
    ^bb0(%x: f32, %o: f32):
      %m = arith.maximumf %x, %z : f32
      linalg.yield %m : f32
  }} -> {c}
  return %g : {c}
}}"""
    return text, lambda x, y, bias: np.maximum(x @ y + bias, 0)


def conv2d(n: int = 1, c: int = 8, h: int = 16, w: int = 16, f: int = 16, kh: int = 3,
           kw: int = 3) -> Kernel:
    """A 2-D convolution (NCHW, FCHW, stride 1, no padding): block ``conv``."""
    oh, ow = h - kh + 1, w - kw + 1
    x, k, o = f"tensor<{n}x{c}x{h}x{w}xf32>", f"tensor<{f}x{c}x{kh}x{kw}xf32>", f"tensor<{n}x{f}x{oh}x{ow}xf32>"
    text = f"""
func.func @main(%X: {x}, %K: {k}) -> {o} {{
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : {o}
  %f = linalg.fill {{loop.block = "conv_init"}} ins(%z : f32) outs(%e : {o}) -> {o}
  %r = linalg.conv_2d_nchw_fchw {{loop.block = "conv", dilations = dense<1> : tensor<2xi64>,
                                  strides = dense<1> : tensor<2xi64>}}
       ins(%X, %K : {x}, {k}) outs(%f : {o}) -> {o}
  return %r : {o}
}}"""

    def reference(xv: np.ndarray, kv: np.ndarray) -> np.ndarray:
        out = np.zeros((n, f, oh, ow), np.float32)
        for i in range(kh):
            for j in range(kw):
                out += np.einsum("nchw,fc->nfhw", xv[:, :, i:i + oh, j:j + ow], kv[:, :, i, j])
        return out

    return text, reference


def row_sum(m: int = 64, n: int = 256) -> Kernel:
    """``S[i] = sum_j X[i, j]``: a reduction block ``S`` with its ``S_init``."""
    x = f"tensor<{m}x{n}xf32>"
    text = f"""
func.func @main(%X: {x}) -> tensor<{m}xf32> {{
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<{m}xf32>
  %f = linalg.fill {{loop.block = "S_init"}} ins(%z : f32) outs(%e : tensor<{m}xf32>) -> tensor<{m}xf32>
  %s = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                        iterator_types = ["parallel", "reduction"], loop.block = "S"}}
       ins(%X : {x}) outs(%f : tensor<{m}xf32>) {{
    ^bb0(%a: f32, %acc: f32):
      %r = arith.addf %acc, %a : f32
      linalg.yield %r : f32
  }} -> tensor<{m}xf32>
  return %s : tensor<{m}xf32>
}}"""
    return text, lambda xv: xv.sum(axis=1)


def transpose_relu(shape: Sequence[int] = (8, 16, 24), perm: Sequence[int] = (1, 2, 0)) -> Kernel:
    """``R = relu(transpose(X, perm))``: a ``linalg.transpose`` block ``T`` (a layout change,
    as graph-layout-nchwc's) and an elementwise block ``R``."""
    out = [shape[p] for p in perm]
    x, y = (f"tensor<{'x'.join(map(str, s))}xf32>" for s in (shape, out))
    ident = f"affine_map<({', '.join(f'd{i}' for i in range(len(out)))}) -> " \
            f"({', '.join(f'd{i}' for i in range(len(out)))})>"
    text = f"""
func.func @main(%X: {x}) -> {y} {{
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : {y}
  %t = linalg.transpose {{loop.block = "T"}} ins(%X : {x}) outs(%e : {y}) permutation = {list(perm)}
  %e2 = tensor.empty() : {y}
  %r = linalg.generic {{indexing_maps = [{ident}, {ident}],
                        iterator_types = [{', '.join(['"parallel"'] * len(out))}], loop.block = "R"}}
       ins(%t : {y}) outs(%e2 : {y}) {{
    ^bb0(%a: f32, %o: f32):
      %m = arith.maximumf %a, %z : f32
      linalg.yield %m : f32
  }} -> {y}
  return %r : {y}
}}"""
    return text, lambda xv: np.maximum(xv.transpose(perm), 0)


def softmax(m: int = 32, n: int = 128) -> Kernel:
    """Row softmax in four blocks: ``max`` (reduction), ``exp`` (x - max, exponentiated),
    ``sum`` (reduction), ``norm`` (divide)."""
    x, r = f"tensor<{m}x{n}xf32>", f"tensor<{m}xf32>"
    ident, row = "affine_map<(i, j) -> (i, j)>", "affine_map<(i, j) -> (i)>"
    text = f"""
func.func @main(%X: {x}) -> {x} {{
  %ninf = arith.constant 0xFF800000 : f32
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : {r}
  %mi = linalg.fill {{loop.block = "max_init"}} ins(%ninf : f32) outs(%e : {r}) -> {r}
  %mx = linalg.generic {{indexing_maps = [{ident}, {row}], iterator_types = ["parallel", "reduction"],
                         loop.block = "max"}} ins(%X : {x}) outs(%mi : {r}) {{
    ^bb0(%a: f32, %acc: f32):
      %v = arith.maximumf %acc, %a : f32
      linalg.yield %v : f32
  }} -> {r}
  %e2 = tensor.empty() : {x}
  %ex = linalg.generic {{indexing_maps = [{ident}, {row}, {ident}], iterator_types = ["parallel", "parallel"],
                         loop.block = "exp"}} ins(%X, %mx : {x}, {r}) outs(%e2 : {x}) {{
    ^bb0(%a: f32, %b: f32, %o: f32):
      %d = arith.subf %a, %b : f32
      %v = math.exp %d : f32
      linalg.yield %v : f32
  }} -> {x}
  %si = linalg.fill {{loop.block = "sum_init"}} ins(%z : f32) outs(%e : {r}) -> {r}
  %sm = linalg.generic {{indexing_maps = [{ident}, {row}], iterator_types = ["parallel", "reduction"],
                         loop.block = "sum"}} ins(%ex : {x}) outs(%si : {r}) {{
    ^bb0(%a: f32, %acc: f32):
      %v = arith.addf %acc, %a : f32
      linalg.yield %v : f32
  }} -> {r}
  %e3 = tensor.empty() : {x}
  %nm = linalg.generic {{indexing_maps = [{ident}, {row}, {ident}], iterator_types = ["parallel", "parallel"],
                         loop.block = "norm"}} ins(%ex, %sm : {x}, {r}) outs(%e3 : {x}) {{
    ^bb0(%a: f32, %b: f32, %o: f32):
      %v = arith.divf %a, %b : f32
      linalg.yield %v : f32
  }} -> {x}
  return %nm : {x}
}}"""

    def reference(xv: np.ndarray) -> np.ndarray:
        e = np.exp(xv - xv.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    return text, reference


def random_inputs(text: str, seed: int = 0) -> list[np.ndarray]:
    """Random float32 inputs for ``@main`` of a kernel text (shapes read from its signature)."""
    import re

    header = re.search(r"func\.func @main\((.*?)\)\s*->", text, re.S).group(1)
    rng = np.random.default_rng(seed)
    arrays = []
    for dims in re.findall(r"tensor<([0-9x]+)xf32>", header):
        shape = tuple(int(d) for d in dims.split("x"))
        arrays.append(rng.standard_normal(shape).astype(np.float32))
    return arrays


def shared_memory_matmul_schedule(text: str, tile: int = 16):
    """A GPU schedule of ``matmul``'s block "C": ``tile x tile`` threads per block, A and B
    staged in shared memory per k step (``cache_read(..., "shared")``)."""
    import mlcir

    sch = mlcir.Schedule(text)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, [None, tile])
    j0, j1 = sch.split(j, [None, tile])
    k0, k1 = sch.split(k, [None, tile])
    sch.reorder(i0, j0, k0, i1, j1, k1)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    for index in (0, 1):
        sch.compute_at(sch.cache_read(c, index, "shared"), k0)
    sch.bind(i1, "threadIdx.y")
    sch.bind(j1, "threadIdx.x")
    return sch


def library_module(name: str) -> Any:
    """``main(x: tensor<4xf32>) -> tensor<4xf32>`` calling the library function ``name``."""
    from mlir import ir
    from mlir.dialects import func

    from mlcir.dialects import graph

    with ir.Location.unknown():
        t = ir.RankedTensorType.get([4], ir.F32Type.get())
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("main", ir.FunctionType.get([t], [t]))
            with ir.InsertionPoint(fn.add_entry_block()):
                func.ReturnOp(graph.call_library(module, name, [fn.arguments[0]], [t]))
    return module
