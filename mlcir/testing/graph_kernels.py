"""Graph functions of the nn/reduction/shape ops, and a check that the default design space's
random traces of their kernels are valid: each one builds and matches, or is rejected with a
ScheduleError — never a wrong result, never a crash of the process.

    python -m mlcir.testing.graph_kernels --seeds 0:3 [--model conv2d]

Each model is lowered to kernels exactly as tuning sees them (``extract_tasks``, i.e. the
``mlcir-kernels`` pipeline). The whole model is first built and compared with numpy (the ops'
``evaluate``, themselves checked against independent references in tests/test_graph_ops.py);
then, for each kernel and seed, a trace is sampled from ``default_space`` (one thread for even
seeds, two for odd ones), built, and its output compared with the unscheduled kernel's on the
same inputs (what the tuner's runner does). A ``START <model> <kernel> <seed>`` line is flushed
before each attempt so a parent process can name what crashed the interpreter (LLVM is an
assertions build); then one JSON line per attempt.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import traceback
from typing import Callable

import numpy as np

Body = Callable[..., object]
# name -> (input arrays, body(graph, *args) -> result value)
Model = tuple[list[np.ndarray], Body]


def models() -> dict[str, Model]:
    rng = np.random.default_rng(0)

    def f(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)

    def conv(**kw):
        base = dict(strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1)
        base.update(kw)
        return base

    pool = dict(kernel=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], dilation=[1, 1],
                ceil_mode=1)
    return {
        "conv2d": ([f(1, 8, 10, 10), f(16, 8, 3, 3)], lambda g, x, w: g.conv2d(x, w, **conv())),
        "conv2d_strided_padded_bias_relu": (
            [f(1, 4, 11, 11), f(8, 4, 3, 3), f(1, 8, 1, 1)],
            lambda g, x, w, bias: g.relu(g.add(g.conv2d(
                x, w, **conv(strides=[2, 2], padding=[1, 1, 1, 1])), bias))),
        # Width stride 3 with dilation 2: three phases of one tap each (kw * 2 mod 3).
        "conv2d_stride3_dilated": ([f(1, 4, 13, 17), f(8, 4, 3, 3)], lambda g, x, w: g.conv2d(
            x, w, **conv(strides=[1, 3], padding=[1, 2, 1, 2], dilation=[2, 2]))),
        "conv2d_grouped": ([f(1, 8, 8, 8), f(8, 2, 3, 3)],
                           lambda g, x, w: g.conv2d(x, w, **conv(padding=[1, 1, 1, 1], groups=4))),
        "conv2d_depthwise": ([f(1, 8, 8, 8), f(8, 1, 3, 3)],
                             lambda g, x, w: g.conv2d(x, w, **conv(strides=[2, 2], groups=8))),
        "max_pool2d": ([f(1, 8, 12, 12)], lambda g, x: g.max_pool2d(x, **pool)),
        "max_pool2d_stride3_dilated": ([f(1, 8, 12, 19)], lambda g, x: g.max_pool2d(
            x, kernel=[3, 3], strides=[2, 3], padding=[1, 1, 1, 1], dilation=[1, 2],
            ceil_mode=0)),
        "avg_pool2d": ([f(1, 8, 12, 12)],
                       lambda g, x: g.avg_pool2d(x, **pool, count_include_pad=0)),
        "sum": ([f(4, 16, 8)], lambda g, x: g.sum(x, axes=[1], keepdims=0)),
        "mean": ([f(2, 8, 4, 4)], lambda g, x: g.mean(x, axes=[2, 3], keepdims=1)),
        "softmax": ([f(8, 64)], lambda g, x: g.softmax(x, axis=1)),
        "layer_norm": ([f(4, 8, 32), f(32), f(32)],
                       lambda g, x, s, b: g.layer_norm(x, s, b, axes=[2], epsilon=1e-5)),
        "batch_matmul": ([f(4, 16, 32), f(4, 32, 24)], lambda g, a, b: g.matmul(a, b)),
        # A weight packed by graph-pack-weights, its bias and activation in the blocked shape.
        "matmul_packed_bias_relu": (
            [f(2, 16, 48), f(3, 48, 32), f(3, 32)],
            lambda g, x, w, bias: g.relu(g.add(g.matmul_packed(x, w), bias))),
        "elementwise_chain": (
            [f(8, 64), f(64)],
            lambda g, x, y: g.gelu(g.add(g.leaky_relu(g.clip(x, min=-2.0, max=2.0), alpha=0.1),
                                         y), approximate="tanh")),
        # Boolean tensors (stored as bytes) in and out of tiled, vectorized kernels.
        "boolean_mask": (
            [f(8, 64), f(64), rng.random((8, 64)) < 0.5],
            lambda g, x, y, m: g.where(g.logical_and(g.less(x, y), g.logical_not(m)), x,
                                       g.negative(y))),
        "compare_to_bool": ([f(8, 64), f(8, 64)], lambda g, x, y: g.logical_or(
            g.greater_equal(x, y), g.isnan(x))),
        "strided_slice": ([f(4, 16, 32)], lambda g, x: g.strided_slice(
            x, begin=[1, 0, 3], end=[4, 16, 32], strides=[1, 2, 1])),
        "strided_slice_reversed": ([f(4, 16, 32)], lambda g, x: g.strided_slice(
            x, begin=[3, 15, 0], end=[-1, -1, 32], strides=[-1, -2, 2])),
        "take": ([f(6, 32), rng.integers(-6, 6, (4, 5)).astype(np.int64)],
                 lambda g, x, i: g.take(x, i, axis=0)),
        "gather_elements": ([f(6, 32), rng.integers(-32, 32, (6, 16)).astype(np.int64)],
                            lambda g, x, i: g.gather_elements(x, i, axis=1)),
        "take_i32": ([f(4, 16, 8), rng.integers(-16, 16, (8,)).astype(np.int32)],
                     lambda g, x, i: g.take(x, i, axis=1)),
        # Fused groups: a gather of a computed tensor (read with tensor.extract, not as an
        # operand), a keepdims reduction with a broadcast epilogue.
        "exp_take": ([f(6, 32), np.array([1, -1, 3, 0], np.int64)],
                     lambda g, x, i: g.take(g.exp(x), i, axis=0)),
        "mean_centered": ([f(8, 32)],
                          lambda g, x: g.subtract(x, g.mean(x, axes=[1], keepdims=1))),
    }


def build_graph_function(inputs: list[np.ndarray], body: Body):
    """A module with ``func.func @main(inputs) -> body(graph, *args)`` built with the builders
    (in a new context)."""
    import mlcir
    from mlir import ir
    from mlir.dialects import func

    from mlcir.dialects import graph
    from mlcir.dialects.dtypes import mlir_element_type

    ctx = mlcir.make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        types = [ir.RankedTensorType.get(list(a.shape), mlir_element_type(a.dtype))
                 for a in inputs]
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("main", ir.FunctionType.get(types, []))
            with ir.InsertionPoint(fn.add_entry_block()):
                result = body(graph, *fn.arguments)
                func.ReturnOp([result])
            fn.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get(types, [result.type]))
    return module


def graph_op_counts(module) -> collections.Counter:
    """How many of each ``graph`` op ``module`` holds, by short name (``conv2d_nchwc``)."""
    from mlir import ir

    counts: collections.Counter = collections.Counter()

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name.startswith("graph."):
            counts[op.name[6:]] += 1
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return counts


def reference(inputs: list[np.ndarray], body: Body) -> np.ndarray:
    """The model in numpy: ``body`` run with each op's ``evaluate``."""
    from mlcir.dialects import graph

    class NumpyGraph:
        def __getattr__(self, name: str):
            return lambda *arrays, **attrs: graph.OPS[name].evaluate(*arrays, **attrs)

    return body(NumpyGraph(), *inputs)


def kernel_inputs(executable, seed: int) -> list[np.ndarray]:
    """Random arguments of a kernel: normal floats; integers in [-2, 3) (indices stay in
    range, negative ones included)."""
    rng = np.random.default_rng(seed)
    arrays = []
    for arg in executable["main"].signature.args:
        if np.issubdtype(arg.dtype, np.floating):
            arrays.append(rng.standard_normal(arg.shape).astype(arg.dtype))
        else:
            arrays.append(rng.integers(-2, 3, arg.shape).astype(arg.dtype))
    return arrays


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    """The largest difference relative to the largest expected magnitude (booleans as 0/1)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-6))


def check_model(name: str, seeds: range, out=sys.stdout) -> None:
    import mlcir
    from mlcir.schedule import ScheduleError
    from mlcir.tune import extract_tasks
    from mlcir.tune.space import default_space

    inputs, body = models()[name]
    module = build_graph_function(inputs, body)
    got = mlcir.build(module).main(*inputs)
    want = reference(inputs, body)
    err = relative_error(got, want)
    print(json.dumps({"model": name, "kernel": None, "status": "ok" if err < 1e-4 else "wrong",
                      "error": err}), file=out, flush=True)
    with module.context:
        tasks = extract_tasks(module)
    for task in tasks:
        plain = mlcir.build(task.module)
        args = kernel_inputs(plain, 0)
        expected = plain.main(*args)
        expected = expected if isinstance(expected, tuple) else (expected,)
        for seed in seeds:
            target = "llvm -threads=1" if seed % 2 == 0 else "llvm -threads=2"
            print(f"START {name} {task.name} {seed}", file=out, flush=True)
            record = {"model": name, "kernel": task.name, "seed": seed, "target": target}
            sch = mlcir.Schedule(task.module, seed=seed)
            try:
                default_space(target)(sch)
                ex = mlcir.build(sch.mod, target=target + " -opt-level=1")
            except ScheduleError as error:
                record.update(status="rejected", reason=str(error).split("\ntrace:")[0])
            except Exception as error:  # noqa: BLE001 - reported with the trace
                record.update(status="error", reason=f"{type(error).__name__}: {error}",
                              traceback=traceback.format_exc())
            else:
                result = ex.main(*args)
                result = result if isinstance(result, tuple) else (result,)
                err = max(relative_error(r, e) for r, e in zip(result, expected))
                record.update(status="ok" if err < 1e-4 else "wrong", error=err)
            record["trace"] = sch.trace.as_python()
            print(json.dumps(record), file=out, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", action="append", choices=sorted(models()),
                        help="a model to check (default: all)")
    parser.add_argument("--seeds", default="0:2", help="start:stop")
    args = parser.parse_args(argv)
    start, stop = (int(x) for x in args.seeds.split(":"))
    for name in args.model or sorted(models()):
        try:
            check_model(name, range(start, stop))
        except Exception as error:  # noqa: BLE001 - reported, the parent decides
            print(json.dumps({"model": name, "kernel": None, "status": "error",
                              "reason": f"{type(error).__name__}: {error}",
                              "traceback": traceback.format_exc()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
