"""The MLC course's two-layer MLP (x[1,784] → linear 128 → relu → linear 10), built three ways.

- ``compiled``: graph ops only (``matmul``/``permute_dims``/``add``/``relu``), lowered to kernels.
- ``library``: every layer a registered Python library function (``env.linear``, ``env.relu``).
- ``mixed``: the course's ``MyModuleMixture``: a hand-written loop-level kernel ``linear0``
  called in destination-passing style, then ``env.relu`` and ``env.linear`` from the library.

Weights use the course's layout: ``w0[128,784]``, ``b0[128]``, ``w1[10,128]``, ``b1[10]``.
Shared by the tests, the demo and the benchmarks.
"""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import arith, func, linalg

from mlcir.dialects import graph
from mlcir.dialects.loop import KERNEL_ATTR, tag_block
from mlcir.ir import make_context
from mlcir.runtime import register_func

SHAPES = {"w0": (128, 784), "b0": (128,), "w1": (10, 128), "b1": (10,)}
VARIANTS = ("compiled", "library", "mixed")


def random_params(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {name: (rng.standard_normal(shape) * 0.05).astype(np.float32)
            for name, shape in SHAPES.items()}


def reference(x: np.ndarray, p: dict[str, np.ndarray]) -> np.ndarray:
    """numpy's answer."""
    h = np.maximum(x @ p["w0"].T + p["b0"], 0)
    return h @ p["w1"].T + p["b1"]


def register_library() -> None:
    """Register ``env.linear`` and ``env.relu`` (destination-passing numpy functions)."""

    def linear(x, w, b, out):
        np.add(x @ w.T, b, out=out)

    def relu(x, out):
        np.maximum(x, 0, out=out)

    register_func("env.linear", linear, override=True)
    register_func("env.relu", relu, override=True)


def _t(*shape: int) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(list(shape), ir.F32Type.get())


def _linear0_kernel() -> func.FuncOp:
    """``linear0(x, w, b, out)``: out = x @ w.T + b, written at loop level (named blocks)."""
    fn = func.FuncOp("linear0", ir.FunctionType.get(
        [_t(1, 784), _t(128, 784), _t(128), _t(1, 128)], [_t(1, 128)]), visibility="private")
    fn.attributes[KERNEL_ATTR] = ir.UnitAttr.get()
    with ir.InsertionPoint(fn.add_entry_block()):
        x, w, bias, out = fn.arguments
        zero = arith.ConstantOp(ir.F32Type.get(), 0.0).result
        init = linalg.fill(zero, outs=[out])
        tag_block(init.owner, "Y_init")
        maps = [ir.AffineMap.get(3, 0, [ir.AffineDimExpr.get(d) for d in dims])
                for dims in ((0, 2), (1, 2), (0, 1))]
        y = linalg.GenericOp_([x, w], [init], maps, ir.ArrayAttr.get([
            ir.Attribute.parse(f"#linalg.iterator_type<{k}>")
            for k in ("parallel", "parallel", "reduction")]))
        with ir.InsertionPoint(y.regions[0].blocks[0]):
            a, bb, acc = y.regions[0].blocks[0].arguments
            linalg.YieldOp([arith.addf(acc, arith.mulf(a, bb))])
        tag_block(y.operation, "Y")
        bmap = [ir.AffineMap.get_identity(2), ir.AffineMap.get(2, 0, [ir.AffineDimExpr.get(1)]),
                ir.AffineMap.get_identity(2)]
        z = linalg.GenericOp_([y.results[0], bias], [out], bmap, ir.ArrayAttr.get([
            ir.Attribute.parse("#linalg.iterator_type<parallel>")] * 2))
        with ir.InsertionPoint(z.regions[0].blocks[0]):
            a, bb, _ = z.regions[0].blocks[0].arguments
            linalg.YieldOp([arith.addf(a, bb)])
        tag_block(z.operation, "Z")
        func.ReturnOp([z.results[0]])
    return fn


def build_module(variant: str, ctx: ir.Context | None = None) -> ir.Module:
    """The MLP as a graph module ``main(x, w0, b0, w1, b1) -> [1, 10]``."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    ctx = ctx or make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        names = ["x", "w0", "b0", "w1", "b1"]
        types = [_t(1, 784), _t(*SHAPES["w0"]), _t(*SHAPES["b0"]), _t(*SHAPES["w1"]),
                 _t(*SHAPES["b1"])]
        with ir.InsertionPoint(module.body):
            if variant == "mixed":
                _linear0_kernel()
            main = func.FuncOp("main", ir.FunctionType.get(types, [_t(1, 10)]))
            main.arg_attrs = ir.ArrayAttr.get([
                ir.DictAttr.get({graph.NAME_ATTR: ir.StringAttr.get(n)}) for n in names])
            with ir.InsertionPoint(main.add_entry_block()):
                x, w0, b0, w1, b1 = main.arguments
                if variant == "compiled":
                    h = graph.relu(graph.add(graph.matmul(x, graph.permute_dims(w0, axes=[1, 0])), b0))
                    y = graph.add(graph.matmul(h, graph.permute_dims(w1, axes=[1, 0])), b1)
                elif variant == "library":
                    h = graph.call_library(module, "env.linear", [x, w0, b0], [_t(1, 128)])[0]
                    h = graph.call_library(module, "env.relu", [h], [_t(1, 128)])[0]
                    y = graph.call_library(module, "env.linear", [h, w1, b1], [_t(1, 10)])[0]
                else:
                    h = graph.call_dps("linear0", [x, w0, b0], [_t(1, 128)])[0]
                    h = graph.call_library(module, "env.relu", [h], [_t(1, 128)])[0]
                    y = graph.call_library(module, "env.linear", [h, w1, b1], [_t(1, 10)])[0]
                func.ReturnOp([y])
    return module
