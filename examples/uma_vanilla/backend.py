"""The Vanilla accelerator of TVM's UMA tutorial as an mlcir UMA backend.

Its one function, ``vanilla_conv2dnchw(ifmap, weights, result, oc, iw, ih, ic, kh, kw)``
(``conv2dnchw.c``, shipped as C source and compiled with the target's toolchain), computes a
stride-1 NCHW convolution of one image with "same" padding. The pattern takes ``graph.conv2d``
with strides [1, 1] (an attribute constraint); the check refuses what the C code cannot do.
"""

from __future__ import annotations

import math
from pathlib import Path

from mlir import ir

from mlcir.passes.patterns import Match, is_op, op_attributes, wildcard
from mlcir.uma import UMABackend, shape


class VanillaAcceleratorBackend(UMABackend):
    """Stride-1 convolutions to ``vanilla_conv2dnchw``."""

    target_name = "vanilla_accelerator"
    sources = (Path(__file__).with_name("conv2dnchw.c"),)

    def __init__(self) -> None:
        super().__init__()
        self.register_pattern(
            "conv2d",
            is_op("graph.conv2d", strides=[1, 1])(wildcard("ifmap"), wildcard("weights")),
            "vanilla_conv2dnchw", returns="int", ints=self.sizes, check=self.check,
            flops=lambda m: 2.0 * math.prod(self.sizes(m)))  # oc*iw*ih*ic*kh*kw multiply-adds

    @staticmethod
    def sizes(match: Match) -> list[int]:
        """The C function's integers: oc, iw, ih, ic, kh, kw."""
        _, ic, ih, iw = shape(match["ifmap"])
        oc, _, kh, kw = shape(match["weights"])
        return [oc, iw, ih, ic, kh, kw]

    @staticmethod
    def check(match: Match) -> str | None:
        """Why the C function cannot compute this convolution, or None."""
        attrs = op_attributes(match.root)
        n, _, _, _ = shape(match["ifmap"])
        _, _, kh, kw = shape(match["weights"])
        if not all(str(ir.ShapedType(v.type).element_type) == "f32" for v in match.values.values()):
            return "the accelerator computes in f32 only"
        if n != 1:
            return f"batch {n}: the accelerator takes one image"
        if attrs["groups"] != 1 or list(attrs["dilation"]) != [1, 1]:
            return "grouped or dilated convolution"
        if kh % 2 == 0 or kw % 2 == 0 or list(attrs["padding"]) != [kh // 2, kw // 2] * 2:
            return f"padding {list(attrs['padding'])} is not 'same' for a {kh}x{kw} kernel"
        return None
