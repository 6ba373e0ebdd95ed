"""Study (issue 14): the stem's strided convolution with its phases fused by hand.

    python bench/phase_fusion.py

The ResNet-50 stem's 7x7/2 convolution (NCHW, with its batch norm and ReLU) is two
accumulating blocks, one per width-stride phase (docs/graph-ops.md). Tiled in program order,
the first phase wrote a whole-result buffer (3.2 MB) that the second, computed row by row with
the epilogue, read back. Here, by hand, the second phase is tiled first, the first is computed
at its row loop and only then tiled inside it with the same register tile, its init
decomposed there, and the epilogue follows at the row loop: 9% faster than the program-order
default, which then learned to do the same (cpu space, ``_tile_at``). The script now checks
that the default and the hand schedule give equal outputs and run alike (timed in turns,
1 thread; docs/measurements/layouts.md, "Third round").
"""

from __future__ import annotations

import os
import sys

for _name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # before numpy loads (MLIR notes)
    os.environ.pop(_name, None)

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from mlcir.frontend import from_onnx  # noqa: E402
from mlcir.schedule import Schedule  # noqa: E402
from mlcir.targets import compile_module  # noqa: E402
from mlcir.targets.cpu.defaults import default_schedule  # noqa: E402
from mlcir.testing import onnx_models  # noqa: E402
from mlcir.testing.timing import interleaved  # noqa: E402
from mlcir.tune.evaluation import random_inputs  # noqa: E402
from mlcir.tune.tasks import extract_tasks  # noqa: E402

TARGET = "llvm -threads=1"
KERNEL = "fused_conv2d_multiply_add_relu"


def fused_by_hand(kernel) -> Schedule:
    """The default schedule's decisions, with the first phase computed at the second's row."""
    sch = Schedule(kernel)
    for name in ("add", "multiply"):
        sch.compute_inline(sch.get_block(name, "main"))
    second = sch.get_block("conv2d_1", "main")
    n, oc, oh, ow, ic, kh, kw = sch.get_loops(second)
    n_o, n_i = sch.split(n, [1, 1])
    oc_o, oc_m, oc_r = sch.split(oc, [1, 8, 8])
    oh_o, oh_i = sch.split(oh, [112, 1])
    ow_o, ow_m, ow_r = sch.split(ow, [1, 7, 16])
    ic_o, ic_i = sch.split(ic, [1, 3])
    kh_o, kh_i = sch.split(kh, [1, 7])
    kw_o, kw_i = sch.split(kw, [1, 3])
    sch.reorder(n_o, oc_o, oh_o, ow_o, n_i, ic_o, kh_o, kw_o, oc_m, oh_i, ow_m, ic_i, kh_i,
                kw_i, oc_r, ow_r)
    sch.vectorize(oc_r)
    first = sch.get_block("conv2d", "main")
    sch.compute_at(first, ow_o)
    n, oc, oh, ow, ic, kh, kw = sch.get_loops(first)[4:]  # inside the row: 1, 64, 1, 112, ..
    oc_m, oc_r = sch.split(oc, [8, 8])
    ow_m, ow_r = sch.split(ow, [7, 16])
    ic_o, ic_i = sch.split(ic, [1, 3])
    kh_o, kh_i = sch.split(kh, [1, 7])
    kw_o, kw_i = sch.split(kw, [1, 4])
    sch.reorder(n, ic_o, kh_o, kw_o, oc_m, oh, ow_m, ic_i, kh_i, kw_i, oc_r, ow_r)
    sch.vectorize(oc_r)
    sch.decompose_reduction(first, ic_o)  # below an own loop: the row loop is shared
    relu = sch.get_block("relu", "main")
    sch.reverse_compute_at(relu, ow_o)
    sch.vectorize(sch.get_loops(relu)[-1])
    return sch


def main() -> None:
    model = onnx_models.resnet50_stem()
    kernel = next(t.module for t in extract_tasks(from_onnx(model)) if t.name == KERNEL)
    variants = {"default": default_schedule(kernel, TARGET), "phases fused": fused_by_hand(kernel)}
    executables = {k: compile_module(v.mod, target=TARGET) for k, v in variants.items()}
    args = random_inputs(executables["default"])
    outputs = [np.asarray(ex["main"](*args)) for ex in executables.values()]
    print(f"max |default - fused|: {float(np.max(np.abs(outputs[0] - outputs[1]))):.3g}")
    calls = {k: ex["main"].prepare(*args)[0] for k, ex in executables.items()}
    for name, seconds in interleaved(calls, rounds=7, budget_s=0.05).items():
        print(f"{name:14s} {seconds * 1e6:9.1f} us")


if __name__ == "__main__":
    main()
