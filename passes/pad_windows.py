"""``graph-pad-windows``: a window op's padding becomes an op that its producer's kernel
computes.

A padded convolution or max pool (``conv2d_nchwc``, ``max_pool2d_nchwc``, and the NCHW
``conv2d``, ``max_pool2d``) copies its whole input into a padded tensor before it reads a
window: for a depthwise convolution or a max pool, memory-bound ops, that copy was the largest
cost left (MobileNetV2's depthwise kernels, the ResNet stem's max pool;
docs/measurements/layouts.md#fifth-round-padding-written-by-the-producer). onnxruntime's
kernels read the borders in place; mlcir's tiles want a padded input, so the padding moves
to where the input is made instead:

- the op's padding (and, for a convolution split into width phases, the columns its phases
  read past it) becomes a ``graph.pad_window`` of its input, with the op's padding value (0,
  or ``-inf`` for the max), and the op reads the padded tensor with no padding of its own;
- ``graph-fuse-ops`` puts a ``pad_window`` in its producer's group (fusion pattern
  ``padding``), so that group's kernel returns the padded tensor: its lowering fills the
  border strips and copies the producer's result into the interior, and bufferization has the
  producer's last block write there instead (``eliminate-empty-tensors``; scheduled, the copy
  is an epilogue computed per tile, the same), so the padded tensor costs the strips.

Only where that pays: the input must have this op as its only user and be made by a graph op
that fuses (not a function argument, a constant or an opaque op); anywhere else a
``pad_window`` would be a copy of its own, as the op's padding is. An average pool keeps its
padding (its divisors count it), and so does a ceil-mode pool whose result would change shape.
Off with the layouts (``mlcir.layout = "none"``): where the padding goes is a layout decision.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from mlcir.dialects import ALL_OPS, graph

from .layout_chains import batch_shape, relaid_functions
from .lowerings.nn import Window
from .registry import ModulePass, register_pass

__all__ = ["PadWindows", "pad_windows"]

# Each window op and the value its padding holds.
_PADDING_VALUES = {"graph.conv2d_nchwc": 0.0, "graph.max_pool2d_nchwc": float("-inf"),
                   "graph.conv2d": 0.0, "graph.max_pool2d": float("-inf")}


def _fusible_producer(x: ir.Value, op: ir.Operation) -> bool:
    """Whether ``x`` is made by a graph op that fuses, and ``op`` is its only user."""
    if isinstance(x.owner, ir.Block):
        return False
    opdef = ALL_OPS.get(x.owner.operation.name)
    if opdef is None or opdef.pattern == "opaque":
        return False
    return all(use.owner.operation == op for use in x.uses)


def _hoisted_padding(op: ir.Operation, attrs: dict) -> list[int]:
    """The padding ``op`` reads its input with: its own, and for a convolution whose width
    stride splits it into phases, the columns the last phase reads past it."""
    top, left, bottom, right = attrs["padding"]
    if op.name in ("graph.conv2d_nchwc", "graph.conv2d"):
        x, w = op.operands
        width = batch_shape(x)[3] + left + right
        window = Window(tuple(batch_shape(w)[2:4]), tuple(attrs["strides"]),
                        tuple(attrs["dilation"]), batch_shape(op.results[0])[3])
        right += window.extra_right_padding(width)
    return [top, left, bottom, right]


def _pad_window_of(op: ir.Operation) -> bool:
    """Move ``op``'s padding into a ``pad_window`` of its input (module docstring); False,
    with nothing changed, where that does not pay or would change the result's shape."""
    value = _PADDING_VALUES.get(op.name)
    if value is None or any(batch_shape(v) is None for v in [*op.operands, op.results[0]]):
        return False
    short = op.name.split(".", 1)[1]
    attrs = graph.OPS[short].read_attrs(op)
    x = op.operands[0]
    if not any(attrs["padding"]) or not _fusible_producer(x, op):
        return False
    with ir.InsertionPoint(op), op.location:
        padded = graph.pad_window(x, padding=_hoisted_padding(op, attrs), value=value)
        new = graph.build(short, [padded, *list(op.operands)[1:]], {**attrs, "padding": [0] * 4})
    if new.type != op.results[0].type:  # (a ceil-mode pooling whose last window moves)
        new.owner.erase()
        padded.owner.erase()
        return False
    op.results[0].replace_all_uses_with(new)
    op.erase()
    return True


def pad_windows(module: ir.Module | ir.Operation) -> int:
    """Move the padding of the window ops of every graph function of ``module`` into their
    producers' kernels (in place, module docstring); returns how many moved."""
    moved = 0
    for fn in relaid_functions(module):
        ops = [op.operation for op in fn.regions[0].blocks[0].operations]
        moved += sum(_pad_window_of(op) for op in ops)
    return moved


@register_pass
@dataclass
class PadWindows(ModulePass):
    name = "graph-pad-windows"
    summary = ("Pad a convolution's or max pool's input where its producer computes it (a "
               "pad_window its kernel writes in place), not by a copy in the window op")

    def run(self, module: ir.Module | ir.Operation) -> None:
        pad_windows(module)
